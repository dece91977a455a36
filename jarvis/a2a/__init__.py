"""Jarvis as an A2A agent (protocol 1.0, with the ``a2a-sdk`` package): section 12 of the design.

- :mod:`jarvis.a2a.daemon`: the few daemon operations A2A uses (one small interface);
- :mod:`jarvis.a2a.card`: the public Agent Card and the extended one;
- :mod:`jarvis.a2a.states`: a task's journal lines and todo as A2A tasks and stream events;
- :mod:`jarvis.a2a.handler`: the request handler (SendMessage, SendStreamingMessage,
  GetTask, ListTasks, CancelTask, SubscribeToTask);
- :mod:`jarvis.a2a.mount`: the routes on the control API's server.

An A2A task is one message of the ``a2a`` channel and the todo it became: its id is the
message id, its context id is the message's ``reply_to``.
"""
