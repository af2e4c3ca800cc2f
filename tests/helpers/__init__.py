"""What the test modules share: stand-ins (vLLM, the Hugging Face Hub, sshd, docker), the demo
plan builder, the recorded databases, chart and browser checks. Test modules import from here,
never from one another; tests/conftest.py holds the fixtures."""
