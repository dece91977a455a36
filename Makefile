# Two entry points for a fresh Debian or Ubuntu machine:
#   make run TASK="..."   set everything up and run one task
#   make test             set everything up and run lint, types and the whole suite
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Xvfb and X tools; the real applications of the test matrix (GTK and Qt editors, a VTE
# terminal, xterm, Chromium) with CJK and emoji fonts; dovecot for the email tests; tmux for the TUI;
# redis-server for the fleet's tests (they start their own on a loopback port); the
# accessibility bus (at-spi2-core, and dbus-x11 for a session bus) for the tree observation;
# podman, runc and debootstrap build and run the container image in tests/test_container*.py.
# Other X servers (tests/xservers.py): Xorg with the dummy driver and xrandr for two monitors,
# TigerVNC's Xvnc. The Wayland desktop (DESIGN section 15): sway run headless, grim
# (screencopy), wtype (a virtual keyboard with its own keymap), wl-clipboard, foot and wev
# (the tests' Wayland apps), swaybg (the benches' Wayland background), qtwayland5 (Qt apps
# on Wayland: featherpad's tree in tests/test_wlroots_a11y.py), wayvnc (the live view and
# takeover of a Wayland desktop). OSWorld tasks (DESIGN
# section 16): LibreOffice Calc, Writer and Impress, GIMP and Thunderbird.
# x11-xkb-utils: setxkbmap for the keyboard-layout tests.
# The portal backend (GNOME, KDE): gst-launch-1.0 with pipewiresrc reads the screen-cast
# streams (gstreamer1.0-tools, -pipewire, -plugins-base: videoconvert, rawparse for tests).
APT_PACKAGES := xvfb xauth xdotool x11vnc xclip x11-utils xterm python3-venv python3-tk \
	xserver-xorg-core xserver-xorg-video-dummy x11-xserver-utils tigervnc-standalone-server \
	mousepad featherpad xfce4-terminal chromium fonts-noto-cjk fonts-noto-color-emoji \
	dovecot-imapd tmux matchbox-window-manager redis-server at-spi2-core dbus-x11 \
	podman runc debootstrap sway swaybg grim wtype wl-clipboard foot wev qtwayland5 wayvnc \
	libreoffice-calc libreoffice-writer libreoffice-impress gimp thunderbird x11-xkb-utils \
	gstreamer1.0-tools gstreamer1.0-pipewire gstreamer1.0-plugins-base
# scrot and ImageMagick: bench/observe.py times the Anthropic demo's capture path beside ours.
APT_PACKAGES += scrot imagemagick
TASK ?=
RUN_ARGS ?=

export ANONYMIZED_TELEMETRY := False
export ORT_DISABLE_TELEMETRY := 1
export HF_HUB_OFFLINE := 1

.PHONY: setup system venv test lint unit run doctor bench clean

setup: system venv

# System packages: the virtual display, X input and clipboard tools.
system:
	@missing=""; \
	for c in Xvfb xdotool xclip xwininfo xterm mousepad featherpad xfce4-terminal chromium tmux matchbox-window-manager redis-server x11vnc podman runc debootstrap Xorg xrandr Xvnc sway swaybg grim wtype wl-copy foot wev wayvnc soffice gimp thunderbird setxkbmap scrot; do command -v $$c >/dev/null || missing="$$missing $$c"; done; \
	$(PYTHON) -c 'import tkinter, ensurepip' 2>/dev/null || missing="$$missing python3-tk/venv"; \
	[ -e /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc ] || missing="$$missing fonts-noto-cjk"; \
	[ -x /usr/sbin/dovecot ] || missing="$$missing dovecot"; \
	[ -e /usr/lib/xorg/modules/drivers/dummy_drv.so ] || missing="$$missing xserver-xorg-video-dummy"; \
	[ -x /usr/libexec/at-spi-bus-launcher ] || missing="$$missing at-spi2-core"; \
	[ -e /usr/lib/x86_64-linux-gnu/qt5/plugins/platforms/libqwayland-generic.so ] || missing="$$missing qtwayland5"; \
	command -v dbus-daemon >/dev/null || missing="$$missing dbus"; \
	[ -e /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] || missing="$$missing fonts-noto-color-emoji"; \
	command -v gst-launch-1.0 >/dev/null || missing="$$missing gstreamer1.0-tools"; \
	[ -e /usr/lib/x86_64-linux-gnu/gstreamer-1.0/libgstpipewire.so ] || missing="$$missing gstreamer1.0-pipewire"; \
	[ -e /usr/lib/x86_64-linux-gnu/gstreamer-1.0/libgstrawparse.so ] || missing="$$missing gstreamer1.0-plugins-base"; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages (missing:$$missing)"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $(APT_PACKAGES) >/dev/null; \
	fi

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,osworld]'
	touch $@

lint: venv
	$(BIN)/ruff check jarvis tests bench
	$(BIN)/ruff format --check jarvis tests bench
	$(BIN)/mypy jarvis

# The suite on TEST_WORKERS pytest-xdist workers, CI's way (2 was the faster of 2 and 3 in
# whole runs on this 2-core machine), `--dist loadgroup`: tests that share a container or a
# module's set-up carry an xdist_group and stay on one worker. Then the tests marked serial
# (they assert a latency or load the machine themselves) run alone. Each pass prints its 20
# slowest tests. TEST_WORKERS=0 runs the whole suite in one pytest process.
# See docs/development.md.
TEST_WORKERS ?= 2
# The files that hold serial tests: the second pass collects only these (tests/conftest.py
# refuses a serial test in a file where this grep would miss it).
SERIAL_FILES = $(shell grep -l 'mark\.serial' tests/test_*.py)
# What the slowest tests install (the container tests' image, the fresh-install test's
# wheelhouse) is made first, outside pytest's time: tests/prepare.py.
unit: setup
	$(BIN)/python -m tests.prepare
ifeq ($(TEST_WORKERS),0)
	$(BIN)/pytest -q --durations=20
else
	@status=0; \
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadgroup -m "not serial" --durations=20 || status=$$?; \
	$(BIN)/pytest -q -m serial --durations=20 $(SERIAL_FILES) || status=$$?; \
	exit $$status
endif

test: setup lint unit

# Runs one task. On a desktop session DISPLAY is set and Jarvis drives that screen;
# without one, the task runs inside a fresh virtual display (Xvfb) with a terminal
# (xterm) open on it, from which the agent can start programs.
export TASK
run: setup
	@if [ -z "$$TASK" ]; then echo 'usage: make run TASK="what Jarvis should do"'; exit 2; fi
	@if [ -n "$$DISPLAY" ]; then \
	  $(BIN)/jarvis run $(RUN_ARGS) "$$TASK"; \
	else \
	  echo "no DISPLAY: running inside a virtual display (xvfb-run, 1920x1080) with a terminal open"; \
	  xvfb-run -a -s "-screen 0 1920x1080x24 -noreset" bash -c \
	    'xterm -geometry 120x36+80+60 -fa Monospace -fs 12 & term=$$!; \
	     $(BIN)/jarvis run $(RUN_ARGS) "$$TASK"; code=$$?; kill $$term 2>/dev/null; exit $$code'; \
	fi

doctor: setup
	$(BIN)/jarvis doctor

bench: setup
	@for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
