"""Level-Based Foraging tasks of EPyMARL's benchmark that lbforaging 2.0.0 does not register.

EPyMARL's README lists 15x15-3p-5f and 15x15-4p-5f (5 foods); lbforaging 2.0.0
registers ids with 1 to 4 foods only. Importing this module registers them as
`lbf_epymarl/Foraging-15x15-3p-5f-v3` and `lbf_epymarl/Foraging-15x15-4p-5f-v3`:
the package's 4-food task of the same size and players with `max_num_food=5`.
The `epymarl_lbf` preset imports it in every run (as `--env_module` would).
"""

from typing import Any, Callable

import gymnasium

import wrappers

FAMILY = "lbf_epymarl"
FOODS = 5
TASKS = ("15x15-3p-5f", "15x15-4p-5f")


def _maker(task: str) -> Callable[..., Any]:
    base_id = f"Foraging-{task.replace(f'-{FOODS}f', f'-{FOODS - 1}f')}-v3"

    def make(**env_kwargs: Any) -> Any:
        import lbforaging  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
        # (Registers the package's ids.) Its env checker is for single-agent envs.
        return gymnasium.make(base_id, disable_env_checker=True,
                              **{"max_num_food": FOODS, **env_kwargs})

    return make


def name(task: str) -> str:
    """The registered environment name of one of `TASKS`."""
    return f"{FAMILY}/Foraging-{task}-v3"


for _task in TASKS:
    wrappers.register_environment(name(_task), _maker(_task))
