"""jinja2 templates of the HLS C++ and Verilog back ends (shipped inside the package)."""
