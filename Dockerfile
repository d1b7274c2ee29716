# ComputerOps: runs the demo (SCRIPTED endpoint) in Debian's Chromium headless shell.
FROM python:3.11-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium-headless-shell \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY computerops computerops
COPY sites sites
COPY tasks tasks
COPY adapter adapter
COPY verifier verifier
COPY replays replays
RUN pip install --no-cache-dir . && useradd --create-home computerops
USER computerops
WORKDIR /home/computerops
ENV COMPUTEROPS_CHROMIUM=/usr/lib/chromium/chromium-headless-shell
CMD ["computerops", "demo", "--out", "runs/demo"]
