"""The page's reading of a pasted config.json: rules found by running the library's parser."""

from inference_arithmetic.page import own_config


def test_the_pages_reading_rules_are_the_parsers():
    # Each size the page reads from a field is the parser's, in every registry config of the
    # family, and moves with its field as the parser's does; the fixed fields are as parsed.
    rules = own_config.reading()
    assert {"llama", "qwen3", "mixtral", "qwen3_moe"} <= set(rules)
    assert "deepseek_v3" not in rules  # latent attention: sizes the page would have to derive
    for templates in rules.values():
        for template in templates:
            config = own_config._verbatim(template["name"])
            sizes = own_config._sizes(config)
            for size, field in template["sizes"].items():
                if field in config:
                    assert sizes[size] == config[field], (template["name"], size)
            grown = {**config, "vocab_size": config["vocab_size"] + 64}
            assert own_config._sizes(grown)["vocab_size"] == grown[template["sizes"]["vocab_size"]]
            for field, rule in template["fixed"].items():
                assert rule["value"] == config.get(field), (template["name"], field)
    # A size the parser derives is asked for by its own field: Llama 3.1's config has no
    # head_dim, which the parser takes as hidden_size / num_attention_heads.
    llama = rules["llama"][0]
    assert llama["sizes"]["d_head"] == "head_dim" and "head_dim" not in own_config._verbatim(
        "llama-3.1-8b"
    )
