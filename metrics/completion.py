"""Shell completion for `bench` and `benchwarmers` (issue 17 item 3): the commands, each command's options,
and collection names from the server when it is reachable (`bench collections --names`, silent and
empty when it is not, so a stopped server never puts an error into a command line).

The launcher builds the scripts from its own table of commands and the CLI's parser, so a command
added to either completes without touching this file.

    eval "$(bench completion bash)"     # in ~/.bashrc
    eval "$(bench completion zsh)"      # in ~/.zshrc
"""

SHELLS = ("bash", "zsh")
NAMES_TAKERS = ("ask", "record")  # commands whose first argument is a collection

BASH = r"""_benchwarmers_complete() {
    local cur=${COMP_WORDS[COMP_CWORD]} command=${COMP_WORDS[1]} opts=""
    if [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W "%(commands)s" -- "$cur"))
        return
    fi
    case "$command" in
        %(takers)s)
            if [[ $COMP_CWORD -eq 2 && $cur != -* ]]; then
                COMPREPLY=($(compgen -W "$(${COMP_WORDS[0]} collections --names 2>/dev/null)" -- "$cur"))
                return
            fi ;;
    esac
    case "$command" in
%(options)s
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -o filenames -F _benchwarmers_complete bench benchwarmers
"""

ZSH = r"""_benchwarmers() {
    local -a commands opts
    commands=(%(described)s)
    if (( CURRENT == 2 )); then
        _describe command commands
        return
    fi
    case $words[2] in
        %(takers)s)
            if (( CURRENT == 3 )) && [[ $PREFIX != -* ]]; then
                compadd -- ${(f)"$($words[1] collections --names 2>/dev/null)"}
                return
            fi ;;
    esac
    case $words[2] in
%(options)s
    esac
    if [[ $PREFIX == -* ]]; then
        compadd -- $opts
    else
        _files
    fi
}
compdef _benchwarmers bench benchwarmers
"""


def script(shell, commands):
    """The completion script for `shell`; `commands` is `[(name, summary, [option, ...]), ...]`."""
    cases = "\n".join(f'        {name}) opts="{" ".join(options)}" ;;' if shell == "bash"
                      else f"        {name}) opts=({' '.join(options)}) ;;" for name, _, options in commands if options)
    fields = {"commands": " ".join(name for name, _, _ in commands), "takers": "|".join(NAMES_TAKERS),
              "options": cases,
              "described": " ".join(_quoted(f"{name}:{summary}") for name, summary, _ in commands)}
    return (BASH if shell == "bash" else ZSH) % fields


def _quoted(text):
    """A zsh word in single quotes."""
    return "'" + text.replace("'", "'\\''") + "'"
