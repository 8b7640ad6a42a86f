#!/bin/sh
# Runs the bundled Go example; CHORUS_BIN is the agent's own executable.
exec "$CHORUS_BIN" skill example echo-hub
