//! Engine facade tests through a buffer output (no network needed).

use super::*;
use parking_lot::Mutex;
use std::sync::Arc;

#[test]
fn engine_answers_through_its_output() {
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Buf::default();
    let mut e = Engine::new(Out::new(Box::new(buf.clone())));
    assert_eq!(e.handle_line("uci\n"), Flow::Continue);
    assert_eq!(
        e.handle_line("position startpos moves e2e4 e7e5"),
        Flow::Continue
    );
    e.handle_line("position startpos moves e2e4 e2e4");
    assert_eq!(
        e.game.moves().len(),
        2,
        "the rejected command kept the old position"
    );
    e.handle_line("setoption name MultiPV value 4");
    assert_eq!(e.options.settings().multipv, 4);
    assert_eq!(e.handle_line("quit"), Flow::Quit);
    let text = String::from_utf8(buf.0.lock().clone()).unwrap();
    assert!(text.contains("\nuciok\n"), "{text}");
    assert!(
        text.contains("info string error: position rejected: move 2 'e2e4'"),
        "{text}"
    );
    assert!(text.lines().all(|l| l.starts_with("id ")
        || l.starts_with("option ")
        || l == "uciok"
        || l.starts_with("info string ")));
}
