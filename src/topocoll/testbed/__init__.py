"""The emulated switched cluster (network namespaces, shaped links, real TCP)."""
