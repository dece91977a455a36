"""Teach by showing (DESIGN.md section 17): `jarvis record NAME` watches a person on the
desktop (XRecord), turns their clicks, drags, scrolls and keys into steps with targets,
and writes a skill file the agent recalls from long-term memory; `jarvis replay
--recording NAME` repeats it without the model."""
