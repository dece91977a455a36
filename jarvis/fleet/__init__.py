"""The fleet: many desktops, one queue (DESIGN.md section 10).

Tasks go from the coordinator (``jarvis serve --fleet``) to ``jarvis worker`` processes,
each owning one desktop, through Redis Streams. The queue protocol
(:mod:`jarvis.fleet.protocol`: claim, renew, complete, give back) has two engines: the
markdown todo list (the embedded default) and Redis (:mod:`jarvis.fleet.redis_queue`).
Nothing here is imported unless a fleet is named.

Side: both (the coordinator and the workers).
"""
