"""Errors that name their cause in one line (issue 19 §6.8): a broker config file that is not
UTF-8 (also with skip_damaged), a ``config`` that is a regular file, and get_message with a
filter that is not a MessageFilter."""
from __future__ import annotations

import pytest

from rocketfilter.store.config_files import ConfigFileError, read_broker_config
from tests.store.test_config_files import SAMPLES, broker_store


def test_a_config_file_that_is_not_utf8_is_named(tmp_path):
    root = broker_store(tmp_path)
    (root / "config" / "topics.json").write_bytes(b'{"topicConfigTable":{"\xff\xfe":1}}')
    with pytest.raises(ConfigFileError, match=r"^config/topics.json: not UTF-8 text") as info:
        read_broker_config(str(root))
    assert "\n" not in str(info.value)
    files = read_broker_config(str(root), skip_damaged=True)
    assert files.skipped["topics.json"] == str(info.value)
    assert "topics.json" not in files.found and "consumerOffset.json" in files.found


def test_a_config_that_is_a_regular_file_is_named(tmp_path):
    root = broker_store(tmp_path, where="")   # the files beside commitlog/ ...
    (root / "config").write_text("not a directory")   # ... and a file named config
    with pytest.raises(ConfigFileError, match=r"^config: a regular file, not the broker's config "
                                              r"directory"):
        read_broker_config(str(root))
    files = read_broker_config(str(root), skip_damaged=True)
    assert "regular file" in files.skipped["config"]


def test_get_message_with_a_string_filter_is_a_clear_type_error():
    from rocketfilter.pull.get_message import get_message

    with pytest.raises(TypeError, match=r"message_filter must be an ExpressionMessageFilter .*"
                                        r"not str"):
        get_message(object(), "G", "T", 0, 0, 32, "TagA")
