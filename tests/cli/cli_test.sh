echo "cli: not written yet"; exit 1
