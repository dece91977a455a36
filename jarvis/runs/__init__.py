"""Runs: the journal of every task (:mod:`jarvis.runs.journal`), reading it back
(:mod:`jarvis.runs.reader`; one folder: :mod:`jarvis.runs.folder`), the index of the run
folders (:mod:`jarvis.runs.index`) and its listing (:mod:`jarvis.runs.listing`), and
``jarvis runs`` (:mod:`jarvis.runs.commands`)."""
