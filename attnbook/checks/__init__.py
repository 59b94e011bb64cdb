"""The exercises' checks. `attnbook.check(name, fn)` is the only entry point: `machinery` runs an answer
against its exercise's reference and prints the one line; `section1` .. `section6` hold the
exercises (cases, reference, known mistakes), by the section that first asks them. A check does not
depend on the notebook it runs in: every exercise is in one table.
"""
from attnbook.checks import section1, section2, section3, section4, section5, section6
from attnbook.checks.machinery import EXERCISES, check

for _section in (section1, section2, section3, section4, section5, section6):
    EXERCISES.update(_section.EXERCISES)

__all__ = ["EXERCISES", "check"]
