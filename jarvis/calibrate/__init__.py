"""`jarvis calibrate`: which coordinate convention a model's answers fit.

It composes the layers below it (a provider, a model profile, the tool registry's specs
and the screenshot pipeline), so it lives above them, beside the other commands.
"""
