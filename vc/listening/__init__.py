"""The static HTML listening report (`vc report EXP`): scores, players, figures in one folder."""

from vc.listening.report import build_report

__all__ = ["build_report"]
