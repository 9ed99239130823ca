# Docs against the binary, the Makefiles and the results (`make test-docs`):
# - tools/docs_check.py: README.md's option table lists exactly the options the built engine declares in
#   its `uci` answer (names, types, defaults, ranges), and every `make <target>` written in code in the
#   READMEs exists;
# - tools/docs_tables.py: every generated table of README.md and weights/README.md equals what its results
#   JSON in tools/results/ gives (`make docs` rewrites them);
# - tools/doc_rules.py: no process language in the docs and code comments; README.md, weights/README.md and
#   training/CAMPAIGN.md within their line limits.
# Their own tests are in tools/tests/ (test_docs_check.py, test_docs_tables.py, test_doc_rules.py).
DOCS_CHECKED ?= weights/README.md tools/README.md training/README.md
DOCS_GENERATED ?= README.md weights/README.md

.PHONY: test-docs docs
test-docs: build $(VENV_STAMP)
	$(ORT_ENV) $(PY) -m glimpse_tools.docs_check --engine $(BIN) --repo . README.md $(DOCS_CHECKED)
	$(PY) -m glimpse_tools.docs_tables --repo . --check $(DOCS_GENERATED)
	$(PY) -m glimpse_tools.doc_rules --repo .

# Rewrites the generated tables of README.md and weights/README.md from tools/results/*.json.
docs: $(VENV_STAMP)
	$(PY) -m glimpse_tools.docs_tables --repo . --write $(DOCS_GENERATED)
