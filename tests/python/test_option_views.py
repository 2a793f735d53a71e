"""The Python keywords are a view of the one table of run options that the command line and
SessionOptions read (api/run_options.h): co_up.OPTIONS names exactly the keys the Session takes,
plus the command line's meter options, which the Session refuses saying so."""

import pytest

import co_up
from co_up import _co_up

METER = {"meter", "meter-log", "meter-window"}


def session_keys():
    """The keys SessionOptions::set takes, as its unknown-key message lists them."""
    with pytest.raises(co_up.InputError) as error:
        _co_up._Session.open_zoo("squeezenet", [("no-such-option", "1")])
    message = str(error.value)
    prefix = "unknown session option 'no-such-option' (known: "
    assert message.startswith(prefix) and message.endswith(")"), message
    return set(message[len(prefix):-1].split(", "))


def test_keywords_name_the_session_keys_and_the_meter_options():
    assert set(co_up.OPTIONS.values()) == session_keys() | METER
    assert len(set(co_up.OPTIONS.values())) == len(co_up.OPTIONS)


@pytest.mark.parametrize("keyword", sorted(k for k, name in co_up.OPTIONS.items() if name in METER))
def test_meter_keywords_are_refused_as_command_line_only(keyword):
    with pytest.raises(co_up.InputError, match="is command-line only"):
        co_up.Session.zoo("squeezenet", **{keyword: "x"})


def test_power_is_the_one_switch():
    assert co_up._FLAGS == {"power"}
