"""Secrets the model never sees (DESIGN.md section 17): a store of named values (the OS
keyring, or an encrypted file whose key the user holds), RFC 6238 one-time codes from a
stored seed, and the ``jarvis secrets`` command. The tools that type them live in
:mod:`jarvis.tools.secret_tools`."""
