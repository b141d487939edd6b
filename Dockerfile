# okra-manager container image.
#
#   docker build -t okra-manager:latest .          # or: buildah bud -t okra-manager:latest .
#   make image                                     # buildah, on a Debian base built locally
#
# BASE is any image with Python 3.11+ and `python3 -m venv` (python:3.11-slim by default;
# `make image` builds a Debian bookworm base with mmdebstrap when no registry but Debian's is
# reachable). The build stage installs the pinned runtime dependencies from requirements.lock
# with their hashes (`pip --require-hashes`), then okra itself, into a virtualenv; the final
# stage copies only that virtualenv onto a clean BASE: no compiler, no pip, no build tools. The
# test harness is another distribution (okra-testkit, under testkit/) that is never copied. It
# runs as a numeric non-root user, so runAsNonRoot can verify it, and needs nothing writable
# but /tmp (the Deployment mounts an emptyDir there and sets readOnlyRootFilesystem).
#
# Behind a TLS-intercepting proxy, pass its CA bundle as a build secret:
#   buildah bud --secret id=pip-ca,src=/etc/ssl/certs/ca-certificates.crt ...

ARG BASE=python:3.11-slim

FROM ${BASE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python3 -m venv /opt/okra
WORKDIR /src
COPY requirements.lock ./
RUN --mount=type=secret,id=pip-ca,required=false \
    if [ -s /run/secrets/pip-ca ]; then export PIP_CERT=/run/secrets/pip-ca; fi; \
    /opt/okra/bin/pip install --no-deps --only-binary=:all: --require-hashes -r requirements.lock
COPY pyproject.toml README.md ./
COPY src ./src
# okra itself, built by the backend pyproject.toml declares (setuptools>=77), then checked,
# stripped of pip, and byte-compiled (the root filesystem is read-only).
RUN --mount=type=secret,id=pip-ca,required=false \
    set -e; \
    if [ -s /run/secrets/pip-ca ]; then export PIP_CERT=/run/secrets/pip-ca; fi; \
    /opt/okra/bin/pip install --no-deps . ; \
    /opt/okra/bin/pip check; \
    /opt/okra/bin/python -m pip uninstall --yes --quiet pip setuptools wheel 2>/dev/null || true; \
    rm -f /opt/okra/bin/pip /opt/okra/bin/pip3*; \
    find /opt/okra -name __pycache__ -prune -exec rm -rf {} +; \
    /opt/okra/bin/python -m compileall -q /opt/okra >/dev/null; \
    /opt/okra/bin/okra-manager --help >/dev/null

FROM ${BASE}
# HOME: the user has no passwd entry, and libraries look for ~ at import; /tmp is the one
# writable place.
ENV PATH=/opt/okra/bin:$PATH \
    HOME=/tmp \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/okra /opt/okra
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/opt/okra/bin/okra-manager"]
