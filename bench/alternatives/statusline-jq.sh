#!/bin/bash
# The common bash + jq status line: sum the three usage fields of the status-line JSON.
input=$(cat)
tokens=$(printf '%s' "$input" | jq -r '.context_window.current_usage | (.input_tokens // 0) + (.cache_creation_input_tokens // 0) + (.cache_read_input_tokens // 0)')
window=$(printf '%s' "$input" | jq -r '.context_window.context_window_size // 200000')
echo "ctx $((tokens * 100 / window))% · ${tokens}/${window}"
