"""Runs: the journal of every task (:mod:`jarvis.runs.journal`), reading it back
(:mod:`jarvis.runs.reader`) and ``jarvis runs`` (:mod:`jarvis.runs.commands`)."""
