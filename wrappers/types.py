"""Types shared by every multi-agent environment wrapper."""

from typing import NamedTuple

import numpy as np


class OLT(NamedTuple):
    """One agent's observation: what it sees, which actions are legal, whether it is done.

    `legal_actions` is a 0/1 vector with one entry per discrete action (all ones
    when the environment has no action mask); `terminal` is 1.0 once the agent
    has left the episode.
    """

    observation: np.ndarray
    legal_actions: np.ndarray
    terminal: np.ndarray
