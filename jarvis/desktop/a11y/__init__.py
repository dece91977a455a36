"""Accessibility (AT-SPI): the bus of a desktop session (:mod:`.bus`, :mod:`.session`),
the tree of a window read for a model (:mod:`.reader`, :mod:`.tree`, cut to what scroll
areas show: :mod:`.clip`) and the elements a step shows it (:mod:`.view`)."""

from jarvis.desktop.a11y.reader import A11yReader
from jarvis.desktop.a11y.tree import Element, Tree

__all__ = ["A11yReader", "Element", "Tree"]
