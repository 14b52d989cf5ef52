"""A deterministic, varied text corpus for tokenizer parity tests and benchmarks.

``build_corpus(size_bytes)`` returns a list of documents (str) whose UTF-8 size
is at least ``size_bytes``. The mix is fixed: real code (the Python standard
library on this machine), prose (its docstrings and licence texts found on
disk, some with CRLF line ends), CJK and kana, emoji (ZWJ sequences, flags,
skin tones, keycaps), numbers of many lengths and scripts, whitespace and
newline runs, punctuation before newlines, every added-token string in odd
surroundings, and random code points from all planes. Same machine, same size,
same seed -> same corpus.
"""
from __future__ import annotations

import ast
import random
import sysconfig
from pathlib import Path
from typing import Callable, Iterator

# Share of the corpus each kind of document gets.
MIX: dict[str, float] = {
    "code": 0.30,
    "prose": 0.18,
    "cjk": 0.10,
    "emoji": 0.05,
    "numbers": 0.05,
    "whitespace": 0.10,
    "punct_newlines": 0.04,
    "special_tokens": 0.06,
    "random_unicode": 0.07,
    "mixed_scripts": 0.05,
}

_STDLIB_FILES = (
    "textwrap.py", "argparse.py", "difflib.py", "csv.py", "string.py", "heapq.py", "functools.py",
    "collections/__init__.py", "ast.py", "inspect.py", "typing.py", "pathlib.py", "tarfile.py",
    "json/decoder.py", "json/encoder.py", "email/message.py", "http/client.py", "urllib/parse.py",
    "logging/__init__.py", "unittest/case.py", "asyncio/base_events.py", "decimal.py", "fractions.py",
    "statistics.py", "random.py", "shutil.py", "subprocess.py", "tempfile.py", "zipfile.py", "pydoc.py",
    "dataclasses.py", "enum.py", "re/_parser.py", "tokenize.py", "calendar.py", "datetime.py", "locale.py",
    "gettext.py", "pprint.py", "configparser.py", "optparse.py", "doctest.py", "pickle.py", "smtplib.py",
    "imaplib.py", "ftplib.py", "mailbox.py", "turtle.py", "platform.py", "sysconfig.py",
)

_LICENCE_GLOBS = ("/usr/share/common-licenses/*",)

_EMOJI = [
    "😀", "😂", "🥲", "🤖", "🚀", "🔥", "✨", "❤️", "👍", "👍🏽", "👋🏿", "🙏🏻", "🧑‍💻", "👩🏽‍💻",
    "👨‍👩‍👧‍👦", "👩‍❤️‍💋‍👨", "🏳️‍🌈", "🏴‍☠️", "🐻‍❄️", "❤️‍🔥", "🇯🇵", "🇺🇸", "🇩🇪", "🇨🇳", "🇧🇷", "🇪🇺",
    "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "1️⃣", "#️⃣", "*️⃣", "©️", "™️", "☺️", "⌚", "🀄", "🃏", "🫠", "🪿", "🧬", "🦀",
]

_CJK_PUNCT = "，。、「」『』・ー！？：；（）〜…《》【】"
_CJK_SENTENCES = [
    "今天天气很好，我们去公园散步吧。", "机器学习模型需要大量的数据进行训练。", "这是一个测试句子，包含中文标点符号！",
    "東京は日本の首都です。", "私はプログラミングが好きです。", "カタカナとひらがなを混ぜて書きます・テスト。",
    "ラーメンを食べに行きましょう！", "彼女は「ありがとう」と言った。", "인공지능은 빠르게 발전하고 있습니다.",
    "龘龍龜龠 㐀㐁㐂 鿦鿧鿿 ｶﾀｶﾅ ゔゕゖ ゟ ヿ ㇰㇱ",
]

_WS_ATOMS = [
    " ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", "\r\n\r\n", " \n", "\n ", "\u00a0", "\u3000",
    "\u2028", "\u2029", "\x0b", "\x0c", "\x85", "\u2003", "\u202f", "\x1c", "\x1f", "\u200b", "\u200d", "\ufeff",
    "a", "Ab", "word", "é", "e\u0301", "\u0301", "ñ", "1", "12", "123456", "²", "٣", ".", ",", "!", "?",
    "...", "--", "—", "«", "»", "(", ")", "{", "}", "'s", "'S", "’", "\"", "#", "$", "<", ">", "|", "｜",
    "▁", "_", "`", "日本", "カ", "ー", "・", "😀", "🇯🇵", "\x00", "\x7f", "ﬁ", "Ⅻ", "½", "﷽", "ゟ",
    "Ω", "ß", "İ", "ǅ", "ʰ", "ᾼ", "\U0001d400", "\U000e0041", "\ue000", "\U0010fffd",
]

_PUNCT_LINE_ENDS = [".\n", ".\n\n", "!\n", "?\r\n", ":\n\t", ";\n", "});\n", "]\r\n\r\n", ")\n    ", "...\n",
                    "。\n", "！\r\n", "\",\n", "',\n\n", "-->\n", "*/\n", "#\n", "%\n\n\n", "\u2026\n", " .\n"]


def _stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _code_docs(rng: random.Random) -> Iterator[str]:
    base = _stdlib_dir()
    texts = [t for t in (_read(base / f) for f in _STDLIB_FILES) if t]
    rounds = 0
    while texts:
        for text in texts:
            # Later rounds reuse the files with other line ends and indentation.
            if rounds % 3 == 1:
                text = text.replace("\n", "\r\n")
            elif rounds % 3 == 2:
                text = text.replace("    ", "\t")
            for start in range(0, len(text), 6000):
                yield text[start:start + 6000]
        rounds += 1


def _prose_docs(rng: random.Random) -> Iterator[str]:
    base = _stdlib_dir()
    docs: list[str] = []
    for f in _STDLIB_FILES:
        text = _read(base / f)
        if not text:
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=False)
                if doc and len(doc) > 40:
                    docs.append(doc)
    licences = [base / "LICENSE.txt"]
    for pattern in _LICENCE_GLOBS:
        licences += sorted(Path("/").glob(pattern.lstrip("/")))
    chunks: list[str] = []
    for p in licences:
        text = _read(p) if p.is_file() else None
        if text:
            chunks.extend(text[i:i + 4000] for i in range(0, len(text), 4000))
    # Alternate licence text and docstrings so that any prefix of the stream has both.
    mixed: list[str] = []
    step = max(1, len(docs) // max(1, len(chunks)))
    for k, chunk in enumerate(chunks):
        mixed.append(chunk)
        mixed.extend(docs[k * step:(k + 1) * step])
    mixed.extend(docs[len(chunks) * step:])
    docs = mixed
    n = 0
    while docs:
        for doc in docs:
            yield doc.replace("\n", "\r\n") if n % 4 == 3 else doc
            n += 1


def _cjk_docs(rng: random.Random) -> Iterator[str]:
    while True:
        parts = []
        for _ in range(rng.randint(20, 60)):
            r = rng.random()
            if r < 0.3:
                parts.append(rng.choice(_CJK_SENTENCES))
            elif r < 0.5:
                parts.append("".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(rng.randint(1, 12))))
            elif r < 0.65:
                parts.append("".join(chr(rng.randint(0x3040, 0x30FF)) for _ in range(rng.randint(1, 10))))
            elif r < 0.75:
                parts.append(rng.choice(_CJK_PUNCT) + rng.choice(["", "\n", "\r\n", " "]))
            elif r < 0.85:
                parts.append(rng.choice([" ", "", "123", "2024年", "第3章", "AI", " GPU ", "\n"]))
            else:
                parts.append("".join(chr(rng.randint(0xAC00, 0xD7A3)) for _ in range(rng.randint(1, 6))))
        yield "".join(parts)


def _emoji_docs(rng: random.Random) -> Iterator[str]:
    words = ["hello", "ok", "ship it", "fire", "ready", "日本", " ", "\n", "!!", "lol", "#tag", "@user"]
    while True:
        yield "".join(rng.choice(_EMOJI) * rng.randint(1, 3) + rng.choice(words) for _ in range(rng.randint(30, 120)))


def _number(rng: random.Random) -> str:
    k = rng.randint(1, 40)
    digits = "".join(rng.choice("0123456789") for _ in range(k))
    style = rng.randrange(10)
    if style == 0:
        return f"{int(digits):,}"
    if style == 1:
        return digits[: max(1, k // 2)] + "." + digits[k // 2:]
    if style == 2:
        return "-" + digits
    if style == 3:
        return hex(int(digits))
    if style == 4:
        return f"{rng.randint(1900, 2100)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if style == 5:
        return f"{rng.random():.{rng.randint(1, 17)}e}"
    if style == 6:
        # Non-ASCII decimal digits (Arabic-Indic, Devanagari, fullwidth, Bengali, Thai).
        zero = rng.choice([0x660, 0x966, 0xFF10, 0x9E6, 0xE50])
        return "".join(chr(zero + int(c)) for c in digits[:12])
    if style == 7:
        return "".join(rng.choice("²³¹½¼¾ⅫⅣ①②⑩㉑𝟙𝟚𐌢") for _ in range(rng.randint(1, 6)))
    return digits


def _number_docs(rng: random.Random) -> Iterator[str]:
    seps = [" ", ", ", "\n", "\t", "x", "abc", "+", "=", "%", "$", " km", "px;", "e", "_", "'"]
    while True:
        yield "".join(_number(rng) + rng.choice(seps) for _ in range(rng.randint(50, 200)))


def _whitespace_docs(rng: random.Random) -> Iterator[str]:
    while True:
        yield "".join(rng.choice(_WS_ATOMS) for _ in range(rng.randint(300, 900)))


def _punct_newline_docs(rng: random.Random) -> Iterator[str]:
    words = ["return x", "print(value", "The end", "item", "終わり", "done", "  indented", "", "a, b"]
    while True:
        yield "".join(rng.choice(words) + rng.choice(_PUNCT_LINE_ENDS) for _ in range(rng.randint(60, 200)))


def _added_token_strings() -> list[str]:
    # The strings come from the vocabulary itself, never from a hard-coded list.
    from ds4kit.tokenizer_vocab import load_deepseek_tokenizer_json

    vocab = load_deepseek_tokenizer_json()
    return [t for t, k in zip(vocab.tokens, vocab.token_types) if k != 1]


def _special_docs(rng: random.Random) -> Iterator[str]:
    specials = _added_token_strings()
    glue = ["", " ", "\n", "hi", "<", ">", "｜", "<｜", "｜>", "<<", ">>", "\r\n", "User", "think", "1", "😀", "日本"]
    # First every added token once, each in several surroundings; then random mixes.
    for start in range(0, len(specials), 40):
        yield "".join(rng.choice(glue) + s + rng.choice(glue)
                      + (s[: rng.randint(1, len(s) - 1)] + rng.choice(glue) if k % 4 == 0 else "")
                      for k, s in enumerate(specials[start:start + 40]))
    while True:
        yield "".join(rng.choice(specials) + rng.choice(glue) for _ in range(rng.randint(20, 80)))


def _random_codepoint(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.6:
        lo, hi = 0x0, 0xFFFF
    elif r < 0.8:
        lo, hi = 0x10000, 0x1FFFF
    elif r < 0.9:
        lo, hi = 0x20000, 0x3FFFF
    else:
        lo, hi = 0xE0000, 0x10FFFF
    while True:
        cp = rng.randint(lo, hi)
        if not 0xD800 <= cp <= 0xDFFF:
            return chr(cp)


def _random_unicode_docs(rng: random.Random) -> Iterator[str]:
    while True:
        yield "".join(_random_codepoint(rng) if rng.random() < 0.8 else rng.choice(_WS_ATOMS)
                      for _ in range(rng.randint(200, 800)))


def _mixed_script_docs(rng: random.Random) -> Iterator[str]:
    samples = [
        "Привет, мир! Как дела?", "Γειά σου Κόσμε", "שלום עולם", "مرحبا بالعالم", "नमस्ते दुनिया",
        "สวัสดีชาวโลก", "Xin chào thế giới", "Zürich straße façade naïve", "ĲssELmeer Ǆǅǆ", "ⓐⓑⓒ ⒜⒝",
        "𝐁𝐨𝐥𝐝 𝑖𝑡𝑎𝑙𝑖𝑐", "ᚠᛇᚻ᛫ᛒᛦᚦ", "ꦲꦤꦕꦫꦏ", "ⴰⵣⵓⵍ", "ᏣᎳᎩ", "𓀀𓀁𓀂", "Ꭰ Ꭱ Ꭲ", "I'm he's we'll THEY'RE",
    ]
    while True:
        yield " ".join(rng.choice(samples) + rng.choice(["", ".", "\n", ",", " 42", "\t"])
                       for _ in range(rng.randint(20, 80)))


_GENERATORS: dict[str, Callable[[random.Random], Iterator[str]]] = {
    "code": _code_docs,
    "prose": _prose_docs,
    "cjk": _cjk_docs,
    "emoji": _emoji_docs,
    "numbers": _number_docs,
    "whitespace": _whitespace_docs,
    "punct_newlines": _punct_newline_docs,
    "special_tokens": _special_docs,
    "random_unicode": _random_unicode_docs,
    "mixed_scripts": _mixed_script_docs,
}


def build_corpus_by_kind(size_bytes: int, seed: int = 0) -> dict[str, list[str]]:
    """Documents of each kind; each kind gets its MIX share of size_bytes (at least one document)."""
    out: dict[str, list[str]] = {}
    for i, (kind, share) in enumerate(MIX.items()):
        rng = random.Random(seed * 1000 + i)
        quota = int(size_bytes * share) + 1
        docs, total = [], 0
        for doc in _GENERATORS[kind](rng):
            docs.append(doc)
            total += len(doc.encode("utf-8"))
            if total >= quota:
                break
        out[kind] = docs
    return out


def build_corpus(size_bytes: int, seed: int = 0) -> list[str]:
    """All documents, interleaved round-robin across kinds so every stretch is varied."""
    by_kind = build_corpus_by_kind(size_bytes, seed)
    docs: list[str] = []
    longest = max(len(v) for v in by_kind.values())
    for i in range(longest):
        for kind_docs in by_kind.values():
            if i < len(kind_docs):
                docs.append(kind_docs[i])
    return docs
