"""The ``topocoll`` command: a tiny main over one module per command."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from . import __version__
from ._core import TopocollError
from .commands import COMMANDS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="topocoll",
        description="Topology-aware MPI collectives: plan contention-free all-to-all schedules "
        "for a cluster's switch tree, verify them, and compare them with the MPI's own algorithms.",
    )
    parser.add_argument("--version", action="version", version=f"topocoll {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module in COMMANDS.items():
        p = sub.add_parser(name, help=module.description, description=module.description)
        module.setup_parser(p)
        p.set_defaults(_run=module.run)
    return parser


class Terminated(Exception):
    """SIGTERM (a batch system's time limit, kill): raised where the
    command is, so that its clean-up runs (the testbed's namespaces, the
    packet simulator, temporary files)."""


def _terminate(signum, frame):
    raise Terminated()


#: commands whose --backend mpirun takes the user's launcher after '--'
LAUNCHER_COMMANDS = ("bench", "tune", "model")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    launcher = []
    if argv and argv[0] in LAUNCHER_COMMANDS and "--" in argv:
        at = argv.index("--")
        argv, launcher = argv[:at], argv[at + 1:]
    args = parser.parse_args(argv)
    if launcher:
        args.launcher = launcher
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    try:
        return int(args._run(args) or 0)
    except Terminated:
        print("topocoll: terminated", file=sys.stderr)
        return 143
    except TopocollError as e:
        print(f"topocoll: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("topocoll: interrupted", file=sys.stderr)
        return 130
    except OSError as e:   # a file a command opens itself (an output, a CSV)
        where = f"{e.filename}: " if e.filename else ""
        print(f"topocoll: error: {where}{e.strerror or e}", file=sys.stderr)
        return 2
    except MemoryError:
        print("topocoll: error: out of memory", file=sys.stderr)
        return 2
    except Exception as e:   # a bug: say so in one line, the traceback on request
        if os.environ.get("TOPOCOLL_DEBUG"):
            raise
        print(f"topocoll: internal error: {type(e).__name__}: {e} (TOPOCOLL_DEBUG=1 shows where; "
              "please report it with the command)", file=sys.stderr)
        return 3
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
