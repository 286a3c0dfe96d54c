//! The Paraver configuration (`.pcf`): a fixed header (options and a 23-colour state table),
//! then one `EVENT_TYPE` block per record type with its value labels.

use std::fmt::Write as _;

/// The fixed part, as ovniemu 1.14 writes it.
const HEADER: &str = "DEFAULT_OPTIONS\n\
\n\
LEVEL               THREAD\n\
UNITS               NANOSEC\n\
LOOK_BACK           100\n\
SPEED               1\n\
FLAG_ICONS          ENABLED\n\
NUM_OF_STATE_COLORS 1000\n\
YMAX_SCALE          37\n\
\n\
\n\
DEFAULT_SEMANTIC\n\
\n\
THREAD_FUNC         State As Is\n\
\n\
\n\
STATES_COLOR\n\
0   {  0,   0,   0}\n\
1   {  0, 130, 200}\n\
2   {217, 217, 217}\n\
3   {230,  25,  75}\n\
4   { 60, 180,  75}\n\
5   {255, 225,  25}\n\
6   {245, 130,  48}\n\
7   {145,  30, 180}\n\
8   { 70, 240, 240}\n\
9   {240,  50, 230}\n\
10  {210, 245,  60}\n\
11  {250, 190, 212}\n\
12  {  0, 128, 128}\n\
13  {128, 128, 128}\n\
14  {220, 190, 255}\n\
15  {170, 110,  40}\n\
16  {255, 250, 200}\n\
17  {128,   0,   0}\n\
18  {170, 255, 195}\n\
19  {128, 128,   0}\n\
20  {255, 215, 180}\n\
21  {  0,   0, 128}\n\
22  {  0,   0, 255}\n\
";

/// One record type: its number, label and value labels (in declaration order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PcfType {
    pub(crate) ty: u32,
    pub(crate) label: String,
    pub(crate) values: Vec<(i64, String)>,
}

/// The whole `.pcf` text for `types`, in order.
pub(crate) fn render(types: &[PcfType]) -> String {
    let mut s = String::from(HEADER);
    for t in types {
        // Writing into a String cannot fail.
        let _ = write!(s, "\n\nEVENT_TYPE\n0 {:<10} {}\nVALUES\n", t.ty, t.label);
        for (v, l) in &t.values {
            // Paraver values are C `int`s: the original writes `(int) value`.
            let _ = writeln!(s, "{:<4} {l}", *v as i32);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_follow_the_header() {
        let t = PcfType {
            ty: 7,
            label: "Flushing ovni buffer".into(),
            values: vec![(1, "Flushing".into())],
        };
        let s = render(&[t]);
        assert!(s.starts_with("DEFAULT_OPTIONS\n"));
        assert!(s.ends_with(
            "22  {  0,   0, 255}\n\n\nEVENT_TYPE\n0 7          Flushing ovni buffer\nVALUES\n1    Flushing\n"
        ));
    }
}
