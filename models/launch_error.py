"""The error every model plug-in raises for a setting that cannot produce a launch (the
:class:`LaunchError` of builder/config/model_registry.py's ``Launcher`` contract): one class for
all of them, so a plug-in built on two others (models/roberta_torchtpu: roberta's recipe, torchtpu's
launch) raises and catches the same one, and ``tpubuild train`` prints either as one line.

Shared like models/hosts.py (``from ..launch_error import LaunchError``), so the plug-ins need not
import each other. It imports nothing: ``tpubuild validate`` loads it through
models/roberta/rules.py, and its start-up budget (tests/unit/test_import_budget.py) allows nothing
more.
"""


class LaunchError(ValueError):
    """A setting that cannot produce a launch; ``key`` names the values.env key to fix."""

    def __init__(self, key: str, what: str, fix: str) -> None:
        super().__init__(f"{what}; {fix}")
        self.key = key
        self.what = what
        self.fix = fix
