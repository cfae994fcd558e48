"""Which libraries' code AutoGraph leaves as written when a `tf.function` is traced.

AutoGraph rewrites every Python function a traced function calls, so that
`if`/`for`/`while` over tensors become graph control flow. Most of a trainer's
first step went on rewriting code that has none: Sonnet's modules and
optimizers (written to run under `tf.function(autograph=False)`; its few
functions that need AutoGraph convert themselves, `snt.utils.smart_autograph`),
TRFL's losses (graph-mode TensorFlow 1 code) and dm-tree's nest utilities (pure
Python). Left unconverted, they trace to the same graph; a function that did
need converting would fail loudly at tracing (a tensor used as a Python bool or
iterated), never trace to a different graph.
"""

from tensorflow.python.autograph.core import config as autograph_config

# Top-level packages whose functions AutoGraph calls as they are.
UNCONVERTED_PACKAGES = ("sonnet", "trfl", "tree")


def leave_libraries_unconverted() -> None:
    """Adds `UNCONVERTED_PACKAGES` to AutoGraph's rules (once per process; in front of the
    others, as TensorFlow's own rule for itself)."""
    rules = autograph_config.CONVERSION_RULES
    present = {getattr(rule, "_prefix", None) for rule in rules}
    added = tuple(autograph_config.DoNotConvert(package) for package in UNCONVERTED_PACKAGES
                  if package not in present)
    autograph_config.CONVERSION_RULES = added + tuple(rules)


leave_libraries_unconverted()
