#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora: fuzz/corpus/<target>/*.

Small valid files of each format, built from the format descriptions in
src/radix/io/*.h and src/radix/tokenizer/tokenizer.h (SentencePiece models
are hand-encoded ModelProto protobufs, shaped like what spm_train writes
with --normalization_rule_name=identity). The outputs are committed; rerun
this after changing it:  python3 fuzz/make_seeds.py
"""
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = os.path.join(HERE, "corpus")


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def pattern(n, seed=1):
    return bytes((i * 37 + seed) & 0xFF for i in range(n))


# ---- safetensors -----------------------------------------------------------

def safetensors(tensors, metadata=None, pad=True):
    """tensors: [(name, dtype, shape, bytes)], packed in order."""
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata is not None:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    if pad:
        h += b" " * (-(8 + len(h)) % 8)
    return struct.pack("<Q", len(h)) + h + data


def f32(*xs):
    return struct.pack("<%df" % len(xs), *xs)


def make_safetensors():
    write("safetensors", "basic.safetensors", safetensors([
        ("embed.weight", "F32", [2, 3], f32(1, -2, 3.5, 0, 1e-3, -7)),
        ("half", "F16", [4], pattern(8)),
        ("brain", "BF16", [2], pattern(4, 5)),
        ("step", "I64", [], struct.pack("<q", 42)),
        ("empty", "U8", [0], b""),
        ("mask", "BOOL", [3], b"\x01\x00\x01"),
    ], {"format": "pt", "note": "seed"}))
    write("safetensors", "unpadded_unicode.safetensors", safetensors([
        ("caf\u00e9.\u65e5", "F64", [1], struct.pack("<d", 2.5)),
        ("i", "I32", [2, 1], struct.pack("<2i", -1, 7)),
    ], pad=False))
    write("safetensors", "index.json", json.dumps({
        "metadata": {"total_size": 27, "format": "pt"},
        "weight_map": {"a": "shard-1.safetensors", "b": "shard-1.safetensors", "c": "shard-2.safetensors"},
    }).encode())
    write("safetensors", "empty_header.safetensors", safetensors([]))


# ---- GGUF ------------------------------------------------------------------

GT = dict(u8=0, i8=1, u16=2, i16=3, u32=4, i32=5, f32=6, bool=7, string=8, array=9, u64=10, i64=11, f64=12)
FMT = dict(u8="B", i8="b", u16="H", i16="h", u32="I", i32="i", f32="f", bool="?", u64="Q", i64="q", f64="d")


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gval(t, v):
    if t == "string":
        return gstr(v)
    if isinstance(t, tuple):  # ("array", item_type)
        it = t[1]
        out = struct.pack("<IQ", GT[it] if not isinstance(it, tuple) else GT["array"], len(v))
        return out + b"".join(gval(it, x) for x in v)
    return struct.pack("<" + FMT[t], v)


def gguf(kvs, tensors, alignment=32):
    """kvs: [(key, type, value)]; tensors: [(name, ggml_type, ne, bytes)]."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, t, v in kvs:
        tcode = GT["array"] if isinstance(t, tuple) else GT[t]
        out += gstr(key) + struct.pack("<I", tcode) + gval(t, v)
    data, infos = b"", b""
    for name, ttype, ne, raw in tensors:
        data += b"\0" * (-len(data) % alignment)
        infos += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        infos += struct.pack("<IQ", ttype, len(data))
        data += raw
    out += infos
    out += b"\0" * (-len(out) % alignment)
    return out + data


def q8_block(seed):
    return struct.pack("<e", 0.05) + bytes(((i * 7 + seed) % 256) for i in range(32))


def q4_block(seed):
    return struct.pack("<e", 0.25) + bytes(((i * 13 + seed) % 256) for i in range(16))


def make_gguf():
    write("gguf", "types.gguf", gguf([
        ("general.architecture", "string", "llama"),
        ("general.alignment", "u32", 32),
        ("t.u8", "u8", 200), ("t.i8", "i8", -5), ("t.u16", "u16", 60000), ("t.i16", "i16", -300),
        ("t.i32", "i32", -70000), ("t.f32", "f32", 0.5), ("t.bool", "bool", True),
        ("t.u64", "u64", 1 << 40), ("t.i64", "i64", -(1 << 40)), ("t.f64", "f64", -1.25),
        ("t.ints", ("array", "i32"), [1, -2, 3]),
        ("t.strs", ("array", "string"), ["a", "\u00e9", ""]),
        ("t.nested", ("array", ("array", "u8")), [[1, 2], [3]]),
    ], [
        ("f32", 0, [3], f32(1, 2, 3)),
        ("f16", 1, [2, 2], pattern(8)),
        ("bf16", 30, [4], pattern(8, 3)),
        ("q8", 8, [32], q8_block(1)),
        ("q4", 2, [32, 2], q4_block(2) + q4_block(9)),
    ]))
    tokens = ["<unk>", "<s>", "</s>", "\u2581", "a", "b", "c", "\u2581a", "ab", "\u2581ab", "<0x41>", "<0xC3>",
              "<0xA9>"]
    types = [2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 6, 6, 6]
    write("gguf", "tokenizer.gguf", gguf([
        ("general.architecture", "string", "llama"),
        ("tokenizer.ggml.model", "string", "llama"),
        ("tokenizer.ggml.tokens", ("array", "string"), tokens),
        ("tokenizer.ggml.scores", ("array", "f32"), [0.0, 0.0, 0.0] + [-float(i) for i in range(len(tokens) - 3)]),
        ("tokenizer.ggml.token_type", ("array", "i32"), types),
        ("tokenizer.ggml.bos_token_id", "u32", 1),
        ("tokenizer.ggml.eos_token_id", "u32", 2),
    ], [("token_embd.weight", 0, [2, len(tokens)], f32(*range(2 * len(tokens))))]))
    write("gguf", "align64_metadata_only.gguf", gguf([
        ("general.alignment", "u64", 64), ("general.name", "string", "x")], [], alignment=64))


# ---- llama2.c checkpoints and tokenizers -------------------------------------

def llama2c(dim, hidden, layers, heads, kv_heads, vocab, seq, shared=True):
    kv_dim = dim * kv_heads // heads
    head = dim // heads
    n = (vocab * dim + layers * dim + layers * dim * dim + 2 * layers * kv_dim * dim + layers * dim * dim +
         layers * dim + 3 * layers * hidden * dim + dim + seq * head)  # freq_cis: 2 * seq * head / 2
    if not shared:
        n += vocab * dim
    header = struct.pack("<7i", dim, hidden, layers, heads, kv_heads, vocab if shared else -vocab, seq)
    return header + f32(*[((i * 7) % 11 - 5) / 8 for i in range(n)])


def llama2c_tokenizer(tokens, max_len=None):
    if max_len is None:
        max_len = max(len(t) for _, t in tokens)
    out = struct.pack("<i", max_len)
    for score, t in tokens:
        b = t.encode() if isinstance(t, str) else t
        out += struct.pack("<fi", score, len(b)) + b
    return out


def make_llama2c():
    write("llama2c", "shared.bin", llama2c(4, 8, 1, 2, 1, 8, 4))
    write("llama2c", "unshared.bin", llama2c(2, 4, 2, 1, 1, 5, 2, shared=False))
    base = ["<unk>", "\n<s>\n", "\n</s>\n"]
    byte_toks = ["<0x%02X>" % b for b in (0x0A, 0x41, 0xC3, 0xA9)]
    pieces = [" ", "a", "b", "c", "e", "h", "l", "o", "ab", " a", " ab", "he", "ll", "hell", "hello", " hello"]
    write("llama2c_tokenizer", "tiny.bin",
          llama2c_tokenizer([(0.0, t) for t in base + byte_toks] + [(-float(i), t) for i, t in enumerate(pieces)]))
    write("llama2c_tokenizer", "minimal.bin", llama2c_tokenizer([(0.0, "<unk>"), (0.0, "<s>"), (0.0, "</s>")]))
    tok512 = os.path.join(ROOT, "models", "stories260K", "tok512.bin")
    if os.path.exists(tok512):
        shutil.copyfile(tok512, os.path.join(CORPUS, "llama2c_tokenizer", "tok512.bin"))


# ---- SentencePiece ModelProto ----------------------------------------------

def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, wire, payload):
    return varint(num << 3 | wire) + payload


def pb_bytes(num, b):
    b = b.encode() if isinstance(b, str) else b
    return field(num, 2, varint(len(b)) + b)


def pb_varint(num, v):
    return field(num, 0, varint(v))


def pb_f32(num, v):
    return field(num, 5, struct.pack("<f", v))


NORMAL, UNKNOWN, CONTROL, USER_DEFINED, BYTE = 1, 2, 3, 4, 6


def sp_model(pieces, model_type, byte_fallback=False, add_dummy_prefix=True):
    """pieces: [(text, score, type)]; model_type 1 = unigram, 2 = BPE."""
    out = b""
    for text, score, ptype in pieces:
        body = pb_bytes(1, text) + pb_f32(2, score)
        if ptype != NORMAL:
            body += pb_varint(3, ptype)
        out += pb_bytes(1, body)
    trainer = pb_varint(3, model_type) + pb_varint(4, len(pieces)) + pb_f32(10, 1.0)
    if byte_fallback:
        trainer += pb_varint(35, 1)
    out += pb_bytes(2, trainer)
    normalizer = pb_bytes(1, "identity") + pb_bytes(2, b"")
    if not add_dummy_prefix:
        normalizer += pb_varint(3, 0)
    return out + pb_bytes(3, normalizer)


def make_sentencepiece():
    specials = [("<unk>", 0.0, UNKNOWN), ("<s>", 0.0, CONTROL), ("</s>", 0.0, CONTROL)]
    merges = ["he", "\u2581t", "\u2581the", "on", "\u2581a", "ll", "\u2581hello"]
    chars = ["\u2581"] + list("etaohlnrsdcuw")
    bpe = specials + [(m, -float(i), NORMAL) for i, m in enumerate(merges)]
    bpe += [(c, -float(len(merges) + i), NORMAL) for i, c in enumerate(chars)]
    write("sentencepiece", "bpe.model", sp_model(bpe, 2))
    uni = specials + [(t, -1.0 - i / 4, NORMAL) for i, t in enumerate(chars + ["the", "\u2581hello", "lo"])]
    write("sentencepiece", "unigram.model", sp_model(uni, 1))
    byte_pieces = [("<0x%02X>" % b, 0.0, BYTE) for b in range(256)]
    write("sentencepiece", "bpe_byte_fallback.model",
          sp_model(specials + byte_pieces + bpe[3:], 2, byte_fallback=True))
    odd = specials + [("<sep>", 0.0, CONTROL), ("[U]", 0.0, USER_DEFINED)] + uni[3:]
    write("sentencepiece", "unigram_no_prefix_user.model", sp_model(odd, 1, add_dummy_prefix=False))
    # Regression (tests/tokenizer/sentencepiece_tokenizer_test.cc reads it too):
    # a piece holding a NUL byte makes libsentencepiece's trie builder
    # throw (Darts "zero-length key"); load_sentencepiece must return an error.
    write("sentencepiece", "regress_zero_length_piece.model", sp_model(specials + [("\0", -1.0, NORMAL)] + uni[3:], 1))


if __name__ == "__main__":
    make_safetensors()
    make_gguf()
    make_llama2c()
    make_sentencepiece()
    for target in sorted(os.listdir(CORPUS)):
        files = sorted(os.listdir(os.path.join(CORPUS, target)))
        sizes = [os.path.getsize(os.path.join(CORPUS, target, f)) for f in files]
        print("%-18s %s" % (target, ", ".join("%s (%d B)" % fs for fs in zip(files, sizes))))
