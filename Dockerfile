# Ply Arena in one image: `plyarena serve` by default, `plyarena bots` for a bot fleet (see docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The project lives in /app and is installed in place (editable): the server finds its Alembic migrations
# (migrations/, with alembic.ini for the alembic command) and the browser client (clients/web/) next to
# its own package, as in a checkout.
WORKDIR /app

# The dependencies first, at the exact versions and hashes of requirements.lock (setuptools, the build
# backend, included), in a layer of their own that a change of the sources leaves cached. The lock is made
# from pyproject.toml by `make lock` (pip-compile, Python 3.11); run it again whenever the dependencies there
# change (tests/test_deploy.py fails while the lock does not satisfy them).
COPY requirements.lock ./
RUN pip install --require-hashes --no-deps -r requirements.lock
# Debian's Stockfish, which a fleet seats as chess level 8 (plyarena bots --engine stockfish=...).
RUN apt-get update \
    && apt-get install -y --no-install-recommends stockfish \
    && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml setup.py README.md alembic.ini ./
COPY migrations/ migrations/
COPY games/ games/
COPY bots/ bots/
COPY server/ server/
COPY bench/ bench/
COPY plyarena/ plyarena/
COPY clients/ clients/
# The project alone: --no-deps, since the lock brought everything, and no build isolation, so that the
# locked setuptools builds it rather than whichever is newest. setup.py compiles the search kernels and the
# exact Connect Four solver (required here: without them the bots search a hundred times slower and level 8
# is not perfect); the compiler is removed in the same layer once they are built.
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && PLYARENA_BUILD_KERNELS=required pip install -e . --no-deps --no-build-isolation \
    && apt-get purge -y --auto-remove gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --create-home --home-dir /home/arena arena \
    && mkdir /data && chown arena /data

# Run as a plain user, in /data: an SQLite database (the default without --db) lands in that volume.
USER arena
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8765

# No HEALTHCHECK here: the image also runs bot fleets; docker-compose.yml checks the server's /healthz.

ENTRYPOINT ["plyarena"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8765"]
