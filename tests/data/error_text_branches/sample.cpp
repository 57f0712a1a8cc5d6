// Lines tests/scripts/error_text_branches.sh must flag ("bad") and pass ("good");
// tests/CMakeLists.txt, lint.error_text_branches_catches. Never compiled.
if (e.detail == "peer closed the socket") {}                       // bad
if (found.cuda->error().code == "no CUDA driver") {}              // bad
if (priv.error().step != "choose memory type") {}                 // bad
if ("VK_SUCCESS" == m.dma_buf_result) {}                          // bad
if (x.result != "VK_SUCCESS") {}                                  // bad
if (e.code == errno_code(ENOENT)) {}                              // bad
if (errno_code(EPERM) == c) {}                                    // bad
if (record.error().code == kCodeExpectMismatch) {}                // bad
if (size.error().code.rfind("ESPIPE", 0) != 0) {}                 // bad
if (failed.code.starts_with("EMFILE (")) {}                       // bad
if (e.code.substr(0, 6) == "ESPIPE") {}                           // bad
if (r.verdict.why.find(text) == std::string::npos) {}             // bad
if (what.find("] ") != std::string::npos) {}                      // bad
if (e.message() == "recv frame (peer closed the socket)") {}      // bad
if (e.kind == ErrorKind::peer_closed) {}                          // good
if (e.is_errno(ESPIPE)) {}                                        // good
if (word_code(e) == WordCode::expect_mismatch) {}                 // good
if (op == "done") {}                                              // good
std::string why = c->why.size() > 160 ? c->why.substr(0, 157) : c->why;  // good
const std::size_t p = what.find("] ");  // error-text: display only  (good)
