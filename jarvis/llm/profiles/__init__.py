"""Model profiles: coordinate spaces, image sizes and action formats per model family.

See :mod:`jarvis.llm.profiles.settings` (the entries, checked with the settings),
:mod:`jarvis.llm.profiles.catalog` (the profiles and choosing one),
:mod:`jarvis.geometry` (the one mapping from an answer to a pixel),
:mod:`jarvis.llm.profiles.grammars` (text action formats) and
:mod:`jarvis.llm.profiles.adapter` (the provider that speaks them).
"""
