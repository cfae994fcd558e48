"""Commands that parse and check their flags before importing TensorFlow.

A command defines its absl flags, then `parse_and_check` parses the command line as `app.run`
would (`--help` answered, a flag that does not parse refused) and runs the command's own
checks; only then does the command import what is heavy (a system, TensorFlow) and call
`app.run(main, flags_parser=parsed(arguments))`, which does not parse again. `--help` and bad
input are so answered in a second or two (docs/benchmarks.md, "Command-line latency").
Importing this module imports neither TensorFlow nor any system.
"""

from typing import Callable, List, Optional, Sequence

from absl import app

from mava_systems.terminal import console


def parse_and_check(argv: Sequence[str], check: Optional[Callable[[], None]] = None) -> List[str]:
    """Parses `argv` into absl's flags as `app.run` does (its `--help`, `--helpfull`; a flag
    that does not parse is refused with its usage), then calls `check()`; a ValueError it raises
    is printed as one line `error: ...` on stderr and the process exits with status 1.

    Returns the arguments left after the flags (the program name first).
    """
    app.define_help_flags()
    arguments = app.parse_flags_with_usage(list(argv))
    if check is not None:
        try:
            check()
        except ValueError as error:
            console.fail(f"error: {error}")
    return arguments


def parsed(arguments: List[str]) -> Callable[[Sequence[str]], List[str]]:
    """A `flags_parser` for `app.run` that returns `arguments` (what `parse_and_check` returned)
    instead of parsing the command line again."""
    return lambda _: arguments
