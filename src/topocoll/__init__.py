"""topocoll: topology-aware MPI collectives.

The planning, parsing and verification happen in the C core (libtopocoll);
this package is its command line and its Python face.
"""

from ._core import Schedule, Topology, TopocollError, algorithms

__version__ = "0.1.0"
__all__ = ["Schedule", "Topology", "TopocollError", "algorithms", "__version__"]
