# `cpack -G DEB` (or ./run.sh package): a .deb of what `cmake --install` installs, ckptlab and
# ckptlab-cli, the .desktop entry, icon, MIME type, man pages and samples, under /usr.
set(CPACK_PACKAGE_NAME ckptlab)
set(CPACK_PACKAGE_VENDOR "Checkpoint Lab")
set(CPACK_PACKAGE_CONTACT "Checkpoint Lab maintainers <ckptlab@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "Activation checkpointing, made visible: a desktop lab with a real autograd engine")
set(CPACK_PACKAGE_DESCRIPTION
  "Checkpoint Lab loads a model, runs a real forward and backward pass on its own autograd
engine and shows which activations are kept, dropped and recomputed per checkpoint segment,
with a plot of the bytes its allocator really held (PyTorch 1.13's torch.utils.checkpoint
semantics). ckptlab is the desktop app, ckptlab-cli the same engine without a window.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
# Libraries from dpkg-shlibdeps (dpkg-dev; Qt's xcb and offscreen plugins come with libqt6gui6,
# its SVG icon engine with libqt6svg6); what it cannot see is named: the graph layout runs the
# `dot` program.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "graphviz")
include(CPack)
