"""The machine the benchmarks ran on."""

from common import machine, table

if __name__ == "__main__":
    table("Machine", ["", "value"], machine())
