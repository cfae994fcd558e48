"""Installs mava_systems: distributed multi-agent RL systems on Launchpad, Reverb and Acme."""

import setuptools

setuptools.setup(
    name="mava_systems",
    version="0.1.0",
    description="Distributed multi-agent reinforcement learning systems (MADQN and more) on Launchpad.",
    python_requires=">=3.10,<3.11",
    packages=setuptools.find_packages(include=["mava_systems", "mava_systems.*", "wrappers", "wrappers.*"]),
    install_requires=[
        "dm-acme[tf]==0.4.0",
        "dm-launchpad[tensorflow,reverb]==0.5.0",
        "dm-reverb==0.7.0",
        "tensorflow==2.8.0",
        "tensorflow-probability==0.15.0",
        "dm-sonnet==2.0.2",
        "trfl==1.2.0",
        "dm-env==1.6",
        "numpy==1.23.5",
        "pettingzoo[sisl,butterfly]==1.27.0",
        "mpe2==1.1.1",
        "pillow==12.3.0",
        "imageio==2.38.0",
    ],
    extras_require={"test": ["pytest", "pytest-timeout"], "dev": ["pytest", "pytest-timeout"],
                    "video": ["imageio-ffmpeg==0.8.1"]},
)
