"""Shell completion for `bench` and `benchwarmers` (issue 17 item 3): the commands, each command's options,
and collection names from the server when it is reachable (`bench collections --names`, silent and
empty when it is not, so a stopped server never puts an error into a command line).

The launcher builds the scripts from its own table of commands and the CLI's parser, so a command
added to either completes without touching this file.

    eval "$(bench completion bash)"     # in ~/.bashrc
    eval "$(bench completion zsh)"      # in ~/.zshrc
"""

SHELLS = ("bash", "zsh")
# the commands and actions whose first argument is a collection
NAMES_TAKERS = ("ask", "record", "collection show", "collection rm", "collection save")

BASH = r"""_benchwarmers_complete() {
    local cur=${COMP_WORDS[COMP_CWORD]} command=${COMP_WORDS[1]} where=${COMP_WORDS[1]} first=2 opts="" actions=""
    if [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W "%(commands)s" -- "$cur"))
        return
    fi
    case "$command" in
%(actions)s
    esac
    if [[ -n $actions ]]; then
        if [[ $COMP_CWORD -eq 2 ]]; then
            COMPREPLY=($(compgen -W "$actions" -- "$cur"))
            return
        fi
        where="$command ${COMP_WORDS[2]}" first=3
    fi
    case "$where" in
        %(takers)s)
            if [[ $COMP_CWORD -eq $first && $cur != -* ]]; then
                COMPREPLY=($(compgen -W "$(${COMP_WORDS[0]} collections --names 2>/dev/null)" -- "$cur"))
                return
            fi ;;
    esac
    case "$where" in
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
    local -a commands opts actions
    local where=$words[2] first=3
    commands=(%(described)s)
    if (( CURRENT == 2 )); then
        _describe command commands
        return
    fi
    case $words[2] in
%(actions)s
    esac
    if (( ${#actions} )); then
        if (( CURRENT == 3 )); then
            compadd -- $actions
            return
        fi
        where="$words[2] $words[3]" first=4
    fi
    case $where in
        %(takers)s)
            if (( CURRENT == first )) && [[ $PREFIX != -* ]]; then
                compadd -- ${(f)"$($words[1] collections --names 2>/dev/null)"}
                return
            fi ;;
    esac
    case $where in
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
    """The completion script for `shell`; `commands` is `[(name, summary, [option, ...], {action: [option, ...]}),
    ...]`: a command with actions completes its action second, then that action's options."""
    bash = shell == "bash"
    cases = [(name, options) for name, _, options, actions in commands if options and not actions]
    cases += [(f"{name} {action}", options) for name, _, _, actions in commands for action, options in actions.items()]
    fields = {
        "commands": " ".join(name for name, _, _, _ in commands),
        "takers": "|".join(_quoted(t) for t in NAMES_TAKERS),
        "actions": "\n".join(f"        {name}) actions={_words(list(actions), bash)} ;;"
                             for name, _, _, actions in commands if actions),
        "options": "\n".join(f"        {_quoted(where)}) opts={_words(options, bash)} ;;" for where, options in cases),
        "described": " ".join(_quoted(f"{name}:{summary}") for name, summary, _, _ in commands)}
    return (BASH if bash else ZSH) % fields


def _words(words, bash):
    """A list of words as a bash string (`"a b"`) or a zsh array (`(a b)`)."""
    return f'"{" ".join(words)}"' if bash else f"({' '.join(words)})"


def _quoted(text):
    """A shell word in single quotes."""
    return "'" + text.replace("'", "'\\''") + "'"
