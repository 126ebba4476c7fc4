.venv/bin/tessera gen -o build/rtl                    # small preset: 4 tiles
.venv/bin/tessera gen --preset tiny -o build/rtl-tiny --lint
