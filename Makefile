# Developer shortcuts; each target is one of the scripts in scripts/.
.PHONY: demo test build deps mnist clean
demo: ; bash scripts/demo.sh
test: ; bash scripts/test.sh
build: ; bash scripts/build.sh
deps: ; bash scripts/install_deps.sh
mnist: ; bash scripts/fetch_mnist.sh
clean: ; rm -rf build
