"""``jarvis eval SUITE``: run a folder of YAML tasks, each on a fresh virtual display, and
judge the final state with each task's checker (:mod:`jarvis.eval.suite` has the format)."""
