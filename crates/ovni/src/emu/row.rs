//! The Paraver row names (`.row`): one fake node, then one label per row.

/// The `.row` text for rows labelled `labels`, in row order.
pub(crate) fn render<S: AsRef<str>>(labels: &[S]) -> String {
    let mut s = format!(
        "LEVEL NODE SIZE 1\nhostname\n\nLEVEL THREAD SIZE {}\n",
        labels.len()
    );
    for l in labels {
        s.push_str(l.as_ref());
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_label_per_line() {
        assert_eq!(
            super::render(&["TH 1.387"]),
            "LEVEL NODE SIZE 1\nhostname\n\nLEVEL THREAD SIZE 1\nTH 1.387\n"
        );
    }
}
