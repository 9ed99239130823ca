# Docs against the binary (issue 17): README.md's option table lists exactly the options the built engine
# declares in its `uci` answer (names, types, defaults, ranges), and every `make <target>` written in code
# in the four READMEs exists. tools/docs_check.py; its own tests are in tools/tests/test_docs_check.py.
DOCS_CHECKED ?= weights/README.md tools/README.md training/README.md

.PHONY: test-docs
test-docs: build $(VENV_STAMP)
	$(ORT_ENV) $(PY) -m glimpse_tools.docs_check --engine $(BIN) --repo . README.md $(DOCS_CHECKED)
