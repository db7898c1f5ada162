from openprogram_memory.search.tokenize import stem, tokenize


def test_english_lowercases_drops_stopwords_and_stems_plurals():
    assert tokenize("The Bikes of Dave's shop, and ANSWERS!") == ["bike", "dave", "shop", "answer"]


def test_stemmer_is_light():
    assert [stem(w) for w in ["answers", "cities", "glass", "bus", "analysis", "is", "gas"]] == [
        "answer", "city", "glass", "bus", "analysis", "is", "gas",
    ]


def test_chinese_run_gives_bigrams_and_unigrams():
    terms = tokenize("用户喜欢喝乌龙茶")
    assert {"乌龙", "龙茶", "喜欢", "茶", "猫"} - set(terms) == {"猫"}
    assert set(tokenize("乌龙茶")) <= set(terms)


def test_japanese_kana_are_bigrams_only_unless_alone():
    terms = tokenize("私はコーヒーが好きです")
    assert "コー" in terms and "ヒー" in terms and "好き" in terms
    assert "は" not in terms and "コ" not in terms
    assert tokenize("は") == ["は"]


def test_korean_syllable_bigrams_match_across_particles():
    assert "커피" in tokenize("나는 커피를 좋아해요")
    assert set(tokenize("커피")) <= set(tokenize("나는 커피를 좋아해요"))


def test_mixed_scripts_and_fullwidth():
    terms = tokenize("用户用 Python 写 rank_bm25 ＡＢＣ")
    assert "python" in terms and "rank" in terms and "bm25" in terms and "abc" in terms
    assert "用户" in terms


def test_same_function_for_queries_and_documents():
    assert tokenize("") == [] and tokenize("   ") == [] and tokenize("the of and") == []


def test_ascii_fast_path_splits_like_the_unicode_pattern():
    """ASCII text skips NFKC and the big Unicode pattern; the terms must be the same as through them."""
    import random
    import string

    from openprogram_memory.search import tokenize as module

    rng = random.Random(4)
    alphabet = string.ascii_letters + string.digits + string.punctuation + " \t\n_" + "\x00\x1f\x7f"
    samples = ["snake_case and kebab-case", "C++ & C# (v2.0) don't", "x\x00y\x7fz", "ünï"[:0] + "ALL CAPS SHOPS"]
    samples += ["".join(rng.choices(alphabet, k=rng.randint(0, 60))) for _ in range(500)]
    run = module._pattern(module._RUN_PATTERN)
    for text in samples:
        assert text.isascii()
        slow = [module.stem(w) for _, w in run.findall(text.lower()) if w and w not in module.STOPWORDS]
        assert tokenize(text) == slow, text
