# okra-manager container image.
#
#   docker build -t okra-manager:latest .
#
# The build stage installs the pinned runtime dependencies (requirements.lock, the runtime
# subset of requirements-dev.lock; `make lock` writes both) and okra itself into a virtualenv;
# the final stage copies only that virtualenv onto a clean python:3.11-slim and runs as a
# non-root user (numeric, so the pod's runAsNonRoot can verify it).

FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/okra
WORKDIR /src
COPY requirements.lock ./
RUN /opt/okra/bin/pip install --no-deps -r requirements.lock
COPY pyproject.toml README.md ./
COPY src ./src
RUN /opt/okra/bin/pip install --no-deps . \
    && /opt/okra/bin/pip check

FROM python:3.11-slim
ENV PATH=/opt/okra/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/okra /opt/okra
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["okra-manager"]
