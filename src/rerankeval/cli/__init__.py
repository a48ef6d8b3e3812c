"""The ``rerankeval`` console command (see ``main``)."""

from .main import main

__all__ = ["main"]
