"""The email channel (DESIGN.md section 6): fetch, filter, authenticate, second factor,
limits, parse, enqueue-then-mark, reply on the thread. The settings model is imported by
:mod:`jarvis.config`, so this package imports nothing heavy at its top."""
