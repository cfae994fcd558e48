"""Which libraries' code AutoGraph leaves as written when a `tf.function` is traced.

AutoGraph rewrites every Python function a traced function calls, so that
`if`/`for`/`while` over tensors become graph control flow. Much of a trainer's
first step went on rewriting library code that has none and calls none of
ours: Sonnet's optimizers, initializers and leaf layers (Sonnet is written to
run under `tf.function(autograph=False)`), and TRFL's losses (graph-mode
TensorFlow 1 code). Left unconverted, they trace to the same graph. Sonnet's
module wrappers (`sonnet.src.base`, `sonnet.src.utils`) and containers
(`Sequential`, `DeepRNN`, unrolls, MLPs) stay converted: through them
AutoGraph reaches our own modules' methods, which may branch on tensors.
"""

from tensorflow.python.autograph.core import config as autograph_config

# Modules whose functions AutoGraph calls as they are: none calls code of ours.
UNCONVERTED_MODULES = ("sonnet.src.optimizers", "sonnet.src.initializers", "sonnet.src.linear",
                       "sonnet.src.axis_norm", "sonnet.src.reshape", "sonnet.src.bias", "trfl")


def leave_libraries_unconverted() -> None:
    """Adds `UNCONVERTED_MODULES` to AutoGraph's rules (once per process; in front of the
    others, as TensorFlow's own rule for itself)."""
    rules = autograph_config.CONVERSION_RULES
    present = {getattr(rule, "_prefix", None) for rule in rules}
    added = tuple(autograph_config.DoNotConvert(module) for module in UNCONVERTED_MODULES
                  if module not in present)
    autograph_config.CONVERSION_RULES = added + tuple(rules)


leave_libraries_unconverted()
