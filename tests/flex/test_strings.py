"""The string kernels' behaviour the strings_* fixtures don't reach: TF's error texts, hash values,
RE2's syntax as translated and TF's corner cases. Every expected value and error below is TF
2.18.1's, except the two RE2 patterns pytflite refuses (\\p{Greek}, \\C), which TF runs."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest

from pytflite.flex import TfNode, kernel_for
from pytflite.flex.dtypes import BY_NAME
from pytflite.flex.kernels.string_hashes import fingerprint64, siphash24

I32, I64 = BY_NAME["int32"], BY_NAME["int64"]


def strings(*values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = [v if isinstance(v, bytes) else v.encode() for v in values]
    return out


def scalar(value: bytes) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = value
    return out


def run(op: str, *inputs, **attrs):
    attrs = {k: v.encode() if isinstance(v, str) else v for k, v in attrs.items()}
    return kernel_for(op).compute(TfNode(op, "test", attrs), *inputs)


# Hashes: TF's tf.fingerprint / to_hash_bucket / to_hash_bucket_strong of bytes (i * 7 + 3) % 256.
HASH_LENGTHS = (0, 1, 3, 4, 8, 9, 16, 17, 32, 33, 64, 65, 128, 200)
HASH_DATA = [bytes((i * 7 + 3) % 256 for i in range(n)) for n in HASH_LENGTHS] + ["日本語 ünïcode ✓".encode()]
FINGERPRINTS = [
    11160318154034397263,
    13745158429558087051,
    4662423180930907492,
    17566270577251613586,
    907454142650066470,
    16509338067675758591,
    9140634717936656744,
    14506534093795057959,
    11907377154618496232,
    14001582926318596329,
    389040666157116578,
    8638051931306504420,
    7379187116787024497,
    7886090686657605591,
    4840197978790429842,
]
LEGACY_BUCKETS = [
    105434511174508092,
    7001769250909271135,
    5276484929406308779,
    5799242685562273649,
    384654127350334882,
    8965977459318072057,
    5129953047346710616,
    7037566801403733717,
    1458650421252541103,
    2574933530128875931,
    3945209722589307479,
    8278743160437407290,
    8132594031198021779,
    2651614156366774965,
    8167045108025692563,
]
STRONG_BUCKETS = [
    8302223550124830719,
    3645298994192588996,
    5090441740389785328,
    251570221517214840,
    414652972025446769,
    40052866375112974,
    5997165813462559870,
    1853826499638905828,
    4826137236078665790,
    3684856966875483864,
    1179785016079999299,
    2081822169768865980,
    4132560844361785248,
    3986663233048755219,
    4289411763162251825,
]
LARGEST = 2**63 - 1


def test_farmhash_fingerprint64_is_tfs_for_every_length_class():
    assert [fingerprint64(d) for d in HASH_DATA] == FINGERPRINTS
    buckets = run("StringToHashBucketFast", strings(*HASH_DATA), num_buckets=LARGEST)
    assert buckets.dtype == np.int64 and buckets.tolist() == [f % LARGEST for f in FINGERPRINTS]


def test_legacy_and_strong_buckets_are_tfs():
    assert run("StringToHashBucket", strings(*HASH_DATA), num_buckets=LARGEST).tolist() == LEGACY_BUCKETS
    strong = run("StringToHashBucketStrong", strings(*HASH_DATA), num_buckets=LARGEST, key=[98765, 132])
    assert strong.tolist() == STRONG_BUCKETS
    # TF's own test: StrongKeyedHash([98765, 132], "a") == 7157389809176466784
    assert siphash24(98765, 132, b"a") == 7157389809176466784
    with pytest.raises(ValueError, match="Key must have 2 elements"):
        run("StringToHashBucketStrong", strings("a"), num_buckets=10, key=[1])


def test_fingerprint_rows():
    numbers = run("Fingerprint", np.array([[1, 2], [3, 4]], np.int64), scalar(b"farmhash64"), T=I64)
    assert numbers.tolist() == [[13, 174, 106, 137, 46, 191, 85, 144], [243, 64, 135, 33, 239, 128, 109, 162]]
    rows = np.array([[b"a", b"b"], [b"", b"c"]], dtype=object)  # several strings: their fingerprints hashed
    assert run("Fingerprint", rows, scalar(b"farmhash64")).tolist() == [
        [122, 64, 59, 169, 136, 60, 55, 83],
        [146, 4, 241, 178, 47, 233, 29, 30],
    ]
    with pytest.raises(ValueError, match="Unsupported fingerprint method: md5"):
        run("Fingerprint", rows, scalar(b"md5"))
    with pytest.raises(ValueError, match=r"`data` should have at least one dimension: \[\]"):
        run("Fingerprint", scalar(b"a"), scalar(b"farmhash64"))


def test_hashing_a_few_hundred_strings_takes_milliseconds():
    words = strings(*[f"word number {i} with some padding" * (1 + i % 4) for i in range(300)])
    start = time.perf_counter()
    run("StringToHashBucketFast", words, num_buckets=100)
    assert time.perf_counter() - start < 0.5  # about 5 ms on one core


def test_lower_is_ascii_unless_utf8():
    x = strings("HÉLLO", "ΣΑΣ", "A\x00B", b"\xffA")
    assert run("StringLower", x, encoding="").tolist() == [
        "hÉllo".encode(),
        "ΣΑΣ".encode(),
        b"a\x00b",
        b"\xffa",
    ]
    # ICU: final sigma, the input ends at a NUL, bad bytes become U+FFFD
    assert run("StringLower", x, encoding="utf-8").tolist() == [
        "héllo".encode(),
        "σας".encode(),
        b"a",
        "\ufffda".encode(),
    ]
    with pytest.raises(ValueError, match="only utf-8 or '' \\(no encoding\\) is supported, received latin1"):
        run("StringLower", x, encoding="latin1")


def test_strip_and_length():
    assert run("StringStrip", strings(" \t\v\f\ra b\n", "\xa0x", "\x00 a")).tolist() == [
        b"a b",
        "\xa0x".encode(),
        b"\x00 a",
    ]
    x = strings("héllo", b"\xff\x80\x80", "日本")
    assert run("StringLength", x, unit="UTF8_CHAR").tolist() == [5, 1, 2]
    assert run("StringLength", x, unit="BYTE").dtype == np.int32


def substr(x, pos, length, unit="BYTE"):
    return run("Substr", x, np.asarray(pos, np.int32), np.asarray(length, np.int32), unit=unit, T=I32)


def test_substr_positions_lengths_and_errors():
    x = strings("héllo")
    assert substr(x, 1, -1).tolist() == ["éllo".encode()]  # a negative byte length: the rest
    assert substr(x, 1, -1, "UTF8_CHAR").tolist() == [b""]
    assert substr(x, -4, 2, "UTF8_CHAR").tolist() == ["él".encode()]
    assert substr(x, 2, 1).tolist() == [b"\xa9"]  # bytes split a character
    assert substr(strings(b"\x80\x80abc"), 0, 1, "UTF8_CHAR").tolist() == [b"\x80\x80"]
    with pytest.raises(ValueError, match=r"^pos 7 out of range for string b'héllo' at index 0$"):
        substr(x, 7, 1)
    with pytest.raises(ValueError, match=r"^pos -6 out of range for string at index 0$"):
        substr(x, -6, 1, "UTF8_CHAR")
    with pytest.raises(ValueError, match=r"^pos -4 out of range for string at index 0$"):
        substr(x, -4, -2, "UTF8_CHAR")  # -pos - len characters to skip from the end: too many


def test_substr_broadcasting():
    x = np.array([[b"abc", b"defg"]], dtype=object)
    out = substr(x, [[0], [1]], [[1], [2]])
    assert out.tolist() == [[b"a", b"d"], [b"bc", b"ef"]]
    with pytest.raises(ValueError, match=r"pos 5 out of range for string b'abc' at index \(1, 0\)"):
        substr(x, [[0], [5]], [[1], [2]])
    with pytest.raises(ValueError, match="Substr broadcast not implemented for 3 dimensions"):
        substr(x.reshape(1, 1, 2), [[[0]], [[1]]], [[[1]], [[1]]])
    with pytest.raises(ValueError, match=r"Incompatible shapes: \[2\] vs. \[3\]"):
        substr(x.reshape(2), [0, 1, 2], [1, 1, 1])
    with pytest.raises(ValueError, match=r"pos and len should have the same shape, got: \[2\] vs. \[1,2\]"):
        substr(x.reshape(2), [0, 1], [[1, 1]])


def test_join_shapes():
    a, b = strings("a", "b"), strings("x", "y", "z")
    assert run("StringJoin", a, scalar(b"-"), a, separator="|").tolist() == [b"a|-|a", b"b|-|b"]
    with pytest.raises(ValueError, match=r"Input shapes do not match: \[2\] vs. \[3\]"):
        run("StringJoin", a, b)


def test_reduce_join_order_and_errors():
    x = np.array([[b"a", b"b", b"c"], [b"d", b"", b"f"]], dtype=object)
    axes = np.array([0, 1], np.int32)
    assert run("ReduceJoin", x, axes, separator=",", keep_dims=False).tolist() == b"a,d,b,,c,f"
    assert run("ReduceJoin", x, axes[::-1].copy(), separator=",", keep_dims=True).tolist() == [
        [b"a,b,c,d,,f"]
    ]
    with pytest.raises(ValueError, match="Duplicate reduction dimension 1"):
        run("ReduceJoin", x, np.array([-1, 1], np.int32))
    with pytest.raises(ValueError, match="Invalid reduction dimension -3 for input with 2 dimension"):
        run("ReduceJoin", x, np.array(-3, np.int32))


def test_unsorted_segment_join_skips_the_separator_after_empty_parts():
    x = strings("", "a", "", "b", "c", "")
    out = run("UnsortedSegmentJoin", x, np.array([0, 0, 1, 1, 2, 2]), np.int64(4), separator=",")
    assert out.tolist() == [b"a", b"b", b"c,", b""]
    with pytest.raises(ValueError, match="segment_ids are not allowed to exceed num_segments"):
        run("UnsortedSegmentJoin", x, np.array([0, 0, 1, 1, 2, 5]), np.int64(4))
    with pytest.raises(ValueError, match="Segment dimension is 2 while input dimension is 1 in rank 0"):
        run("UnsortedSegmentJoin", x, np.array([0, 1]), np.int64(4))  # TF prints the rank there


def test_split_v2_whitespace_maxsplit_adds_the_rest_even_empty():
    def tokens(value, maxsplit, sep=b""):
        _, values, _ = run("StringSplitV2", strings(value), scalar(sep), maxsplit=maxsplit)
        return values.tolist()

    assert tokens("  a b\t\tc  ", -1) == [b"a", b"b", b"c"]
    assert tokens("  a b\t\tc  ", 1) == [b"a", b"b\t\tc  "]
    assert tokens("abc", 1) == [b"abc", b""]  # TF's quirk: Python gives ["abc"]
    assert tokens("  a  ", 0) == [b"  a  "]
    assert tokens("a,,b,", -1, b",") == [b"a", b"", b"b", b""]
    indices, _, shape = run("StringSplitV2", strings("a b", ""), scalar(b""), maxsplit=-1)
    assert indices.tolist() == [[0, 0], [0, 1]] and shape.tolist() == [2, 2]
    with pytest.raises(ValueError, match=r"input must be a vector, got shape: \[\]"):
        run("StringSplitV2", scalar(b"a"), scalar(b""))


def test_split_v1_splits_at_any_delimiter_byte():
    _, values, _ = run("StringSplit", strings("a,b c", ""), scalar(b", "), skip_empty=False)
    assert values.tolist() == [b"a", b"b", b"c"]  # an empty string has no tokens even so
    with pytest.raises(ValueError, match=r"delimiter must be a scalar, got shape: \[1\]"):
        run("StringSplit", strings("a"), strings(" "))


def test_base64():
    assert run("EncodeBase64", strings("\xff\xfe", "a"), pad=True).tolist() == [b"w7_Dvg==", b"YQ=="]
    assert run("DecodeBase64", strings("YR", "Y-_w", "")).tolist() == [b"a", b"c\xef\xf0", b""]
    for bad, message in [
        ("Y", "length cannot be 1 modulo 4"),
        ("YW JD", "Invalid character"),
        ("YQ=", "Invalid"),
    ]:
        with pytest.raises(ValueError, match=message):
            run("DecodeBase64", strings(bad))


def replace(x, pattern, rewrite, replace_global=True):
    return run(
        "StaticRegexReplace", x, pattern=pattern, rewrite=rewrite, replace_global=replace_global
    ).tolist()


def test_re2_replacement_rules():
    assert replace(strings("abxd"), "x*", "-") == [b"-a-b-d-"]  # no empty match right after a match
    assert replace(strings("x\xffy".encode("latin-1")), "", "-") == [b"-x-\xff-y-"]
    assert replace(strings("ab"), "(a)(b)?", "[\\2\\1\\\\]") == [b"[ba\\]"]
    assert replace(strings("aa"), "a", "\\3") == [b"aa"]  # more groups than the pattern has: unchanged
    assert replace(strings("aa"), "a", "q\\x") == [b"qq"]  # a bad escape ends the rewrite
    assert replace(strings("aa"), "a", "q\\x", replace_global=False) == [b"aa"]


def test_re2_syntax_as_translated():
    x = strings("a\nb\n", "a\vb c", "héllo wörld", "k\u212a", "x{y}")
    assert replace(x[:1], "$", "E") == [b"a\nb\nE"]  # the end of the text only
    assert replace(x[:1], "(?m)^", "S") == [b"Sa\nSb\nS"]
    assert replace(x[1:2], "\\s", "_") == [b"a\vb_c"]  # RE2's \s has no \v
    assert replace(x[2:3], "\\w+", "W") == ["W\xe9W W\xf6W".encode()]  # ASCII classes
    assert replace(x[2:3], "\\p{L}+", "L") == [b"L L"]
    assert replace(x[3:4], "(?i)k", "#") == [b"##"]  # the Kelvin sign folds with k
    assert replace(x[4:], "x{", "#") == [b"#y}"] and replace(x[4:], "x{,2}", "#") == [b"x{y}"]
    assert replace(strings("aaa"), "(?U)a+", "A") == [b"AAA"]  # ungreedy
    assert replace(strings("a\nb"), "\\12", "|") == [b"a|b"]  # octal
    assert replace(strings("ABab"), "a(?i)b|X", "#") == [b"AB#"]  # mid-pattern flags
    assert run("StaticRegexFullMatch", strings("a\n", "ab", ""), pattern="a$|ab|\\B").tolist() == [
        False,
        True,
        True,
    ]


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("(?=a)", "invalid perl operator: (?="),
        ("\\1", "invalid escape sequence: \\1"),
        ("\\Z", "invalid escape sequence: \\Z"),
        ("a**", "bad repetition operator: **"),
        ("a{1001}", "invalid repetition size: {1001}"),
        ("[z-a]", "invalid character class range: z-a"),
        ("(a", "missing ): (a"),
        ("\\p{Greek}", "general categories only"),
        ("\\C", "no equivalent in Python's re"),
    ],
)
def test_re2_refusals(pattern, message):
    with pytest.raises(ValueError, match="^Invalid pattern: .*, error: .*" + re.escape(message)):
        replace(strings("a"), pattern, "")


def test_regex_inputs_must_be_scalars():
    with pytest.raises(ValueError, match=r"Pattern must be scalar, but received \[1\]"):
        run("RegexReplace", strings("a"), strings("a"), scalar(b""))
    with pytest.raises(ValueError, match=r"Rewrite must be scalar, but received \[1\]"):
        run("RegexReplace", strings("a"), scalar(b"a"), strings(""))


def as_string(x, **attrs):
    attrs = {"T": BY_NAME["string" if x.dtype == object else x.dtype.name], **attrs}
    return [v.decode() for v in run("AsString", x, **attrs).reshape(-1)]


def test_as_string_is_printf():
    values = np.array([1.5, -np.inf, np.nan, -np.nan], np.float64)
    assert as_string(values, width=8, fill="0") == ["1.500000", "    -inf", "     nan", "    -nan"]
    assert as_string(values, width=6, fill="-", precision=1) == ["1.5   ", "-inf  ", "nan   ", "-nan  "]
    assert as_string(values, fill="+", shortest=True) == ["+1.5", "-inf", "+nan", "-nan"]
    assert as_string(np.array([5], np.uint8), width=3, fill="+") == ["  5"]  # %u has no sign
    assert as_string(np.array([-5], np.int64), width=4, fill="0") == ["-005"]
    assert as_string(np.array([True]), width=7) == ["true"]
    assert as_string(strings("abcdef"), width=4, precision=2) == ["  ab"]
    assert as_string(np.array([1 + 2j], np.complex64), precision=1) == ["(1.0,2.0)"]
    for attrs, message in [
        ({"precision": 2}, "precision not supported for datatype int32"),
        ({"scientific": True}, "scientific and shortest format not supported for datatype int32"),
        ({"fill": "x"}, 'Fill argument not supported: "x"'),
        ({"fill": "ab"}, "Fill string must be one or fewer characters"),
    ]:
        with pytest.raises(ValueError, match=message):
            as_string(np.array([1], np.int32), **attrs)


def to_number(texts, dtype):
    return run("StringToNumber", strings(*texts), out_type=BY_NAME[dtype])


def test_string_to_number_parsers():
    floats = to_number(["0x1A", " -inf ", "   ", "+.5", "1e-40"], "float32")
    assert floats.tolist() == [26.0, -np.inf, 0.0, 0.5, 0.0]  # denormals flush to 0, as in TF's threads
    assert to_number(["1e-310"], "float64").tolist() == [1e-310]
    assert to_number([" -5\t", "007"], "int32").tolist() == [-5, 7]
    assert to_number(["18446744073709551615"], "uint64").tolist() == [2**64 - 1]
    for text, dtype in [
        ("", "float32"),
        ("1" * 32, "float64"),
        ("+5", "int64"),
        ("-0", "uint32"),
        ("2147483648", "int32"),
        ("1.0", "int64"),
        ("infinity", "float32"),
        ("1e", "float64"),
    ]:
        with pytest.raises(
            ValueError, match=f"^StringToNumberOp could not correctly convert string: {re.escape(text)}$"
        ):
            to_number([text], dtype)


def string_format(*inputs, template="{}", summarize=3):
    types = [BY_NAME["string" if x.dtype == object else x.dtype.name] for x in inputs]
    out = run("StringFormat", *inputs, template=template, placeholder="{}", summarize=summarize, T=types)
    return out[()].decode("latin-1")


def test_string_format_summaries():
    assert string_format(np.arange(7)) == "[0 1 2 ... 4 5 6]"
    assert string_format(np.arange(3), summarize=0) == "[ ...]"
    assert string_format(np.zeros((2, 0))) == "[\n ...]"
    assert string_format(np.array([1 / 3, 0.1], np.float32)) == "[0.333333343 0.1]"
    assert string_format(np.array([1 / 3, -np.nan])) == "[0.33333333333333331 -nan]"
    assert string_format(strings('q"\t\x01é')) == '["q\\"\\t\\001' + "é".encode().decode("latin-1") + '"]'
    assert string_format(np.array([1j, 2], np.complex128), summarize=1) == "[?...]"
    assert string_format(np.int32(1), np.int64(2), template="{}+{}") == "1+2"
    with pytest.raises(ValueError, match="num placeholders in template and num inputs must match: 2 vs. 1"):
        string_format(np.int32(1), template="{}{}")


UNICODE = dict(input_encoding="UTF-8", replacement_char=0xFFFD, replace_control_characters=False, Tsplits=I64)


def test_unicode_decode_cuts_malformed_input_as_icu():
    x = strings(b"a\xffb", b"\xe6\x97", b"\xed\xa0\x80", b"\xf0\x9fa\x98")
    splits, chars, offsets = run("UnicodeDecodeWithOffsets", x, errors="replace", **UNICODE)
    assert splits.tolist() == [0, 3, 4, 7, 10]
    assert chars.tolist() == [97, 0xFFFD, 98, 0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD, 97, 0xFFFD]
    assert offsets.tolist() == [0, 1, 2, 0, 0, 1, 2, 0, 2, 3]
    assert run("UnicodeDecode", x, errors="ignore", **UNICODE)[1].tolist() == [97, 98, 97]
    with pytest.raises(ValueError, match="Invalid formatting on input string"):
        run("UnicodeDecode", x, errors="strict", **UNICODE)
    controls = {**UNICODE, "replace_control_characters": True}
    assert run("UnicodeDecode", strings("a\x01"), errors="strict", **controls)[1].tolist() == [97, 0xFFFD]
    with pytest.raises(ValueError, match="replacement_char out of unicode codepoint range"):
        run("UnicodeDecode", x, errors="replace", **{**UNICODE, "replacement_char": -1})


def test_unicode_decode_utf16_and_transcode():
    x = strings(b"\xd8\x3d\xde\x00", b"\x00a\x00", b"\xdc\x00\x00a")
    decoded = run("UnicodeDecode", x, errors="replace", **{**UNICODE, "input_encoding": "UTF-16-BE"})
    assert decoded[1].tolist() == [0x1F600, 97, 0xFFFD, 0xFFFD, 97]
    attrs = dict(input_encoding="UTF-16-BE", output_encoding="UTF-8", replacement_char=0x3F)
    assert run("UnicodeTranscode", x, errors="replace", **attrs).tolist() == ["😀".encode(), b"a?", b"?a"]
    controls = dict(input_encoding="UTF-8", output_encoding="UTF-8", replace_control_characters=True)
    with pytest.raises(ValueError, match="Invalid formatting on input string"):  # a strict decode replaces
        run("UnicodeTranscode", strings("a\x01"), errors="strict", **controls)
    with pytest.raises(ValueError, match="Could not create converter for input encoding: FOO"):
        run("UnicodeDecode", x, errors="replace", **{**UNICODE, "input_encoding": "FOO"})


def test_unicode_encode():
    values = np.array([104, -1, 0xD800, 0xFFFE], np.int32)
    splits = np.array([0, 1, 4], np.int64)
    attrs = dict(output_encoding="UTF-16-BE", replacement_char=0xFFFD, Tsplits=I64)
    assert run("UnicodeEncode", values, splits, errors="replace", **attrs).tolist() == [
        b"\x00h",
        b"\xff\xfd" * 3,
    ]
    # ignore drops only values outside Unicode: a surrogate and a noncharacter go through
    assert run("UnicodeEncode", values, splits, errors="ignore", **attrs).tolist() == [
        b"\x00h",
        b"\xd8\x00\xff\xfe",
    ]
    with pytest.raises(ValueError, match="Code point is out of range for Unicode, or a noncharacter."):
        run("UnicodeEncode", values, splits, errors="strict", **attrs)
    for bad, message in [
        ([1, 4], "First value in input_splits must be zero."),
        ([0, 2, 3], "Last value in input_splits must be equal to length of input_tensor."),
        ([0, 2, 1, 4], "Values in input_splits must be equal or in ascending order."),
    ]:
        with pytest.raises(ValueError, match=message):
            run("UnicodeEncode", values, np.array(bad, np.int64), errors="replace", **attrs)
