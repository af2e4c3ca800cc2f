#!/usr/bin/env bash
# Record nvidia-smi's real output (device list, banner, the telemetry query Draftbench parses)
# into $OUT, as fixtures for the parsers' tests. usage: record_smi.sh LABEL [query-only]
set -u; out=${OUT:-.}; label=$1
q="index,name,utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu"
nvidia-smi --query-gpu=$q --format=csv,noheader,nounits > "$out/nvidia-smi-query-$label.csv"
[ "${2:-}" = query-only ] && exit 0
nvidia-smi -L > "$out/nvidia-smi-L-$label.txt"
nvidia-smi > "$out/nvidia-smi-banner-$label.txt"
