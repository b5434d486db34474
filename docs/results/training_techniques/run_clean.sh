# Runs a script from a clean source tree, so that edits in progress in the working tree never reach a measurement:
# .whl/src.tgz is `git archive HEAD` plus the files the measurement changes (made on this machine before the call; the
# docs/results data left out but the run scripts), unpacked to /tmp/src with .whl/ beside it. Made here with
#   mkdir /tmp/srcpack && git archive HEAD | tar x -C /tmp/srcpack && cp --parents <changed files> /tmp/srcpack/ &&
#   find /tmp/srcpack/docs/results -type f ! -name '*.sh' -delete && tar czf .whl/src.tgz -C /tmp/srcpack .
set -u
rm -rf /tmp/src && mkdir -p /tmp/src && tar xzf .whl/src.tgz -C /tmp/src && cp -r .whl /tmp/src/ && cd /tmp/src && bash "$@"
