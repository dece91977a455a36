"""OSWorld's tasks on Jarvis desktops, judged by OSWorld's own metric functions
(DESIGN section 16): read the task JSON (:mod:`.tasks`), turn it into an eval task
(:mod:`.convert`), set it up (:mod:`.profile`, :mod:`.steps`, :mod:`.cache`), judge it
(:mod:`.judge`, :mod:`.getters`, :mod:`.metrics`), report it (:mod:`.results`)."""
