"""Messages, images and redaction (gateway.md §8: IMG-1..7, FLT-1..3, EST-1; IMP-11..13, IMP-15; TST-23, TST-25)."""

import base64
import time

import pytest

from benchwarmers.core import images

PNG_1X1 = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6k"
           "gAAAABJRU5ErkJggg==")
SIGNED = "https://user:pw@cdn.example.com:8443/photos/cat.png?X-Amz-Signature=SECRET123&X-Amz-Expires=60#top"
ACCEPTED = '{"type": "image_url", "image_url": {"url": "<http(s) or data: URL>"}}'


def user(*parts):
    return [{"role": "user", "content": list(parts)}]


def image(url):
    return {"type": "image_url", "image_url": {"url": url}}


def refusal_of(messages):
    with pytest.raises(ValueError) as caught:
        images.validate(messages)
    return str(caught.value)


def test_img1_string_content_and_non_object_parts_are_not_inspected():
    messages = [{"role": "system", "content": "data:text/plain;base64,AAAA"},
                {"role": "user", "content": ["file:///etc/passwd", 5, None, {"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": None}, {"role": "assistant"}]
    assert images.validate(messages) == 0


def test_img2_other_apis_image_parts_are_refused_with_the_accepted_form():
    for kind in ("image", "input_image"):
        message = refusal_of(user({"type": kind, "source": {"type": "base64", "data": "AAAA"}}))
        assert f'"{kind}" part is another API\'s shape' in message
        assert ACCEPTED in message


def test_img3_tst23_urls_no_seat_could_be_sent_are_refused_exactly():
    start = "an image_url must be an http(s) URL or a data:image/...;base64, URL, not "
    assert refusal_of(user(image("file:///etc/passwd"))) == start + "[image: file:///etc/passwd]"
    assert refusal_of(user(image("data:text/plain;base64,aGVsbG8="))) == start + "[image: data URL, 1 KB]"
    assert refusal_of(user({"type": "image_url"})) == start + "empty"
    assert refusal_of(user({"type": "image_url", "image_url": {"url": 7}})) == start + "empty"
    assert refusal_of(user(image("http://"))) == start + "[image: http://]"
    assert refusal_of(user(image("https:///no-host.png"))) == start + "[image: https:///no-host.png]"


def test_img3_accepted_forms_case_insensitive_and_string_valued():
    messages = user(image("HTTPS://Example.com/a.png"), image("http://h"), image(PNG_1X1),
                    {"type": "image_url", "image_url": "https://example.com/b.jpg"},
                    image("DATA:IMAGE/svg+xml;BASE64,PHN2Zz4="))
    assert images.validate(messages) == 5


def test_img4_count_is_valid_image_parts_across_all_messages():
    messages = [{"role": "system", "content": [image("https://a.example/1.png")]},
                {"role": "user", "content": [{"type": "text", "text": "compare"}, image(PNG_1X1)]},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": [image("https://a.example/2.png")]}]
    assert images.validate(messages) == 3
    assert images.count(messages) == 3


def test_est1_count_is_zero_when_validation_would_fail():
    bad = user(image("https://a.example/1.png"), image("file:///x"))
    assert images.count(bad) == 0
    assert images.count([{"role": "user", "content": "no pictures"}]) == 0


def test_imp11_parts_that_are_neither_text_nor_image_are_refused_by_type():
    for kind in ("input_audio", "file", "video_url"):
        message = refusal_of(user({"type": "text", "text": "listen"}, {"type": kind, kind: {"data": "AAAA"}}))
        assert f'"{kind}" part cannot be put to a panel' in message
        assert "only text and images" in message


def test_imp11_text_kinds_and_untyped_parts_pass():
    messages = user({"type": "text", "text": "a"}, {"type": "input_text", "text": "b"},
                    {"type": "output_text", "text": "c"}, {"type": "refusal", "refusal": "d"}, {"text": "e"})
    assert images.validate(messages) == 0


def test_imp12_content_of_another_type_is_a_value_error():
    assert refusal_of([{"role": "user", "content": 5}]) == (
        'message 1: "content" must be a string, a list of content parts or null, not a number')
    assert "not a boolean" in refusal_of([{"role": "user", "content": "ok"}, {"role": "user", "content": True}])
    assert "message 2" in refusal_of([{"role": "user", "content": "ok"}, {"role": "user", "content": {"a": 1}}])
    assert refusal_of("hello") == '"messages" must be a list of message objects'
    assert refusal_of(["hello"]) == '"messages" must be a list of message objects'


def test_imp13_unparseable_host_is_refused_with_the_img3_message():
    message = refusal_of(user(image("http://[::1/cat.png")))
    assert message == "an image_url must be an http(s) URL or a data:image/...;base64, URL, not [url]"
    assert images.placeholder("http://[::1") == "[url]"


def test_flt1_text_of_a_message():
    messages = [{"role": "user", "content": [{"type": "text", "text": "look"}, "skipped", image(SIGNED),
                                             {"type": "text"}, {"type": "refusal", "refusal": "no"}]}]
    assert images.flatten(messages) == ("", "look\n[image: https://cdn.example.com:8443/photos/cat.png?...]\n\nno")
    assert images.flatten([{"role": "user", "content": None}]) == ("", "")
    assert images.flatten([{"role": "user", "content": "plain"}]) == ("", "plain")


def test_flt2_system_and_developer_messages_join_by_blank_lines():
    messages = [{"role": "system", "content": "be brief"}, {"role": "developer", "content": [{"type": "text",
                "text": "use British spelling"}]}, {"role": "user", "content": "colour?"}]
    assert images.flatten(messages) == ("be brief\n\nuse British spelling", "colour?")


def test_flt3_one_turn_is_the_prompt_whatever_its_role():
    assert images.flatten([{"role": "assistant", "content": "hello"}]) == ("", "hello")
    assert images.flatten([{"role": "system", "content": "s"}]) == ("s", "")


def test_flt3_a_conversation_is_labelled_turns_never_truncated():
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "a"},
                {"role": "assistant", "content": "b"}, {"content": "c"}, {"role": "tool", "content": "d"}]
    assert images.flatten(messages) == ("s", "user: a\n\nassistant: b\n\nuser: c\n\ntool: d")
    long = "x" * 100_000
    assert images.flatten([{"role": "user", "content": long}, {"role": "user", "content": "y"}])[1].endswith(
        long + "\n\nuser: y")


def test_img6_tst25_placeholder_of_a_one_pixel_png():
    assert images.placeholder(PNG_1X1) == "[image: data URL, 1 KB]"


def test_img6_tst25_placeholder_drops_user_password_query_and_fragment():
    assert images.placeholder(SIGNED) == "[image: https://cdn.example.com:8443/photos/cat.png?...]"
    assert images.placeholder("http://example.com/a.png#frag") == "[image: http://example.com/a.png]"


def test_img6_kb_has_thousands_separators_and_the_path_is_capped():
    big = "data:image/jpeg;base64," + "A" * 1_399_977  # 1,400,000 characters
    assert images.placeholder(big) == "[image: data URL, 1,050 KB]"
    path = "/" + "p" * 300
    assert images.placeholder("https://example.com" + path + "?s=1") == (
        "[image: https://example.com" + path[:200] + "?...]")


def test_img7_tst25_a_data_url_becomes_its_placeholder():
    assert images.redact(f'{{"url": "{PNG_1X1}"}}') == '{"url": "[image: data URL, 1 KB]"}'
    escaped = PNG_1X1.replace("/", "\\/")  # as a JSON echo writes it
    assert images.redact(f"bad image {escaped} sent") == "bad image [image: data URL, 1 KB] sent"


def test_img7_tst25_a_url_loses_user_password_and_query():
    text = f"400: could not fetch {SIGNED} (timed out)"
    assert images.redact(text) == "400: could not fetch https://cdn.example.com:8443/photos/cat.png?... (timed out)"
    assert images.redact('"https://example.com/a/b"') == '"https://example.com/a/b"'
    long_path = "https://example.com/" + "seg-" * 80  # the path is not cut, unlike a placeholder's
    assert images.redact(long_path) == long_path


def test_img7_tst25_an_unparseable_url_is_url():
    assert images.redact("http://[::1?x") == "[url]"
    assert images.redact("see <http://[::1?x> now") == "see <[url]> now"


def test_img7_tst25_a_long_bare_base64_run_is_its_size():
    run = base64.b64encode(bytes(range(256)) * 2).decode()  # 684 characters, two `=` of padding
    assert run.endswith("=")
    assert images.redact(f"echo: {run} end") == "echo: [base64, 1 KB] end"
    assert images.redact("A" * 100) == "[base64, 1 KB]"
    assert images.redact("A" * 99) == "A" * 99


def test_img7_short_text_is_untouched():
    for text in ("", "plain words", "data:image/png is a mime type", "ratio 3/4 and a+b", "mail me: a@b.c"):
        assert images.redact(text) == text


def test_img7_redacting_redacted_text_changes_nothing():
    once = images.redact(f"[image: https://h.example/p?...] [docs](https://h.example/a?sig=1) {SIGNED} {PNG_1X1}")
    assert once == ("[image: https://h.example/p?...] [docs](https://h.example/a?...)"
                    " https://cdn.example.com:8443/photos/cat.png?... [image: data URL, 1 KB]")
    assert images.redact(once) == once


def test_imp15_redact_takes_any_text_and_never_keeps_a_secret():
    error = ValueError(f"upstream said: bad url {SIGNED}")
    redacted = images.redact(error)
    assert "SECRET123" not in redacted and "user:pw" not in redacted
    assert images.redact(None) == ""


def test_img7_redaction_is_fast_on_large_error_text():
    words = ("word " * 50 + "ab" * 49 + " ") * 2000  # 0.7 MB of text with many near-miss runs
    started = time.perf_counter()
    assert images.redact(words) == words
    assert time.perf_counter() - started < 1.0


def test_est1_estimate_errs_high():
    assert images.estimate("") == 0
    assert images.estimate("a") == 1
    assert images.estimate("x" * 40) == 11
    assert images.estimate("x" * 1000) == 275


def test_est1_request_estimate_trims_and_counts_each_image():
    assert images.request_estimate("", "x" * 40, 0) == 11  # "\n\n" + prompt trimmed first
    assert images.request_estimate("s" * 20, "p" * 18, 2) == images.estimate("s" * 20 + "\n\n" + "p" * 18) + 5000
    assert images.request_estimate("", "", 1) == 2500
