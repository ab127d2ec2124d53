# bash completion for mbsim: subcommands, their words and options, and files.
# Installed as share/bash-completion/completions/mbsim; to try it from the
# source tree: source scripts/mbsim-completion.bash
# COMPREPLY gets the names of LIST (as `mbsim models` and `mbsim systems` print them: separated
# by ", ") that start with CUR, each taken as it is written. compgen -W would expand $(...),
# backquotes and $VARIABLES inside its word list, and these names are file names from the data
# directory: a model file named '$(cmd).yaml' ran cmd at the next completion (docs/robustness.md,
# "Children").
_mbsim_add()
{
    local cur=$1 w
    local -a list
    mapfile -t list <<< "${2//, /$'\n'}"
    for w in "${list[@]}"; do
        [[ -n $w && $w == "$cur"* ]] && COMPREPLY+=("$w")
    done
}

_mbsim()
{
    local cur prev cmd
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    cmd=${COMP_WORDS[1]}
    COMPREPLY=()
    local commands="run compare validate sweep merge tune import plot collective calibrate topo systems models help --help --version"

    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        return
    fi
    case $prev in
        --system)
            _mbsim_add "$cur" "$(mbsim systems 2> /dev/null)"
            return ;;
        --model)
            _mbsim_add "$cur" "$(mbsim models 2> /dev/null)"
            return ;;
        --emit)
            COMPREPLY=($(compgen -W "megatron bridge" -- "$cur"))
            return ;;
        -j|--jobs|--top|--gpus|--nodes|--ranks|--progress|--mb-cap|--screen|--shard|--set|--name|--gpu|--op|--sizes|--factor|--params|--drift-threshold|--max-error)
            return ;;
        --cv)
            COMPREPLY=($(compgen -W "family family-all" -- "$cur"))
            return ;;
    esac
    local words="" names="" opts=""
    case $cmd in
        run) opts="--set --json --memory --ops --roofline --trace --emit --help" ;;
        compare) opts="--roofline --help" ;;
        validate) opts="--json --roofline --cv -j --jobs --progress --baseline --drift-threshold --recipes --pairs --junit --max-error --help" ;;
        sweep) opts="--set -j --jobs --top --tsv --json --shard --no-header --resume --progress --mb-cap --exact --screen --help" ;;
        merge) opts="--set --tsv --json --top --help" ;;
        tune) opts="-o --emit -j --jobs --set --help" ;;
        import)
            [ "$COMP_CWORD" -eq 2 ] && words="megatron bridge hf"
            opts="--system --gpus --nodes --model --name -o --help" ;;
        plot)
            [ "$COMP_CWORD" -eq 2 ] && words="validate sweep breakdown gantt memory"
            opts="-o --help" ;;
        collective) opts="--system --gpus --op --sizes --factor --dtype --algo --calib --help" ;;
        calibrate)
            [ "$COMP_CWORD" -eq 2 ] && words="nccl-tests nsys kineto runs transfer"
            opts="--gpu --base --ranks --shapes --params --recipes -j --jobs -o --help" ;;
        topo)
            [ "$COMP_CWORD" -eq 2 ] && names="$(mbsim systems 2> /dev/null)"
            opts="--json --help" ;;
        systems|models) opts="--json --help" ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    else
        [ -n "$words" ] && COMPREPLY=($(compgen -W "$words" -- "$cur")) # constant words only
        _mbsim_add "$cur" "$names"
        mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -f -- "$cur") # one entry per file name
    fi
}
complete -o filenames -F _mbsim mbsim
