# The two commands (see README): `make run` and `make test`. Both install what is missing.
.PHONY: run test bench build release clean

run:
	scripts/run.sh

test:
	scripts/test.sh

bench:
	scripts/bench.sh

build:
	scripts/deps.sh && swift build

release:
	scripts/deps.sh && swift build -c release

clean:
	scripts/pg.sh stop || true
	rm -rf .build .run
